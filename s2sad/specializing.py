"""Gradients specialised to their arguments' shapes and dtypes, one generated function per
signature, made at the first call with it (as ``jax.jit`` traces once per signature).

``grad(f)`` returns a small dispatcher in front of the generic code, with the gradient's own
parameters (so keyword arguments and defaults bind as usual): it reads each argument's type
(and an array's shape and dtype), and calls the code generated for that signature (for a
dict, list or tuple, a second dispatcher reads what it holds: ``tree_item``).  A
signature where nothing is known, or with another library's arrays, runs the generic code.
``S2SAD_SPECIALIZE=0`` (or ``specialize=False``) keeps the generic code.
"""
from __future__ import annotations

import inspect
import types
import warnings
from typing import Any, Callable, Hashable

import numpy as np

from .array_api import library_of, on_library
from .cache import hold
from .compiler import build, wrt_names
from .environment import variable
from .errors import WrtError, ZeroGradientWarning, failing_generated_line

_FACTORIES: dict[str, Callable[..., types.FunctionType]] = {}  # dispatcher source -> its maker (one code object)
Signature = tuple[Hashable, ...]  # per positional argument: (shape, dtype) of an array, or its type
#: (kind, keys, items) of a dict, list or tuple (rules/shapes.py, known_of)
_TREES = (dict, list, tuple)
_LEAVES = frozenset({float, int, np.float64, np.float32, np.int64})  # (rules/shapes.py, known_of)


def signature_of(args: Any) -> Signature:
    """The signature of a call with positional arguments ``args``, as the dispatcher reads it
    (with what its dicts, lists and tuples hold)."""
    return tuple([(a.shape, a.dtype) if a.__class__ is np.ndarray else tree_item(a) if a.__class__ in _TREES
                  else a.__class__ for a in args])


def tree_item(x: Any, depth: int = 0) -> Hashable:
    """The signature item of a dict (of str keys), list or tuple: ``(kind, keys, items)``,
    keys None for a list or tuple, items the signature items of its values (arrays, floats,
    ints, such containers up to 4 deep); its type when it holds anything else."""
    kind = x.__class__
    keys = tuple(x) if kind is dict else None
    if depth > 3 or keys is not None and any(k.__class__ is not str for k in keys):
        return kind
    items: list[Any] = []
    for v in (x.values() if kind is dict else x):
        if v.__class__ is np.ndarray:
            items.append((v.shape, v.dtype))
        elif v.__class__ in _LEAVES:
            items.append(v.__class__)
        elif v.__class__ in _TREES and (item := tree_item(v, depth + 1)) is not v.__class__:
            items.append(item)
        else:
            return kind
    return kind, keys, tuple(items)


def enabled(flag: bool | None) -> bool:
    """Whether gradients are specialised: ``flag``, else ``S2SAD_SPECIALIZE`` (default on)."""
    return flag if flag is not None else variable("S2SAD_SPECIALIZE") != "0"


def specializing(fn: types.FunctionType, wrt: Any, kind: str, generic: Callable[..., Any]) -> Callable[..., Any]:
    """The dispatcher in front of ``generic``, the generated ``kind`` of ``fn`` (one per
    generic function: it holds the specialisations made so far)."""
    held = generic.__dict__.get("__s2sad_specializing__")
    if held is not None:
        return held  # type: ignore[no-any-return]
    code = generic.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_kwonlyargcount or any(
            p.startswith("_s2sad_") for p in code.co_varnames[:code.co_argcount]):
        return generic
    params = code.co_varnames[:code.co_argcount]
    table: dict[Signature, Callable[..., Any]] = {}
    # what the dispatcher reads: ``table``, or for one parameter the same keyed by its item
    # (no tuple to build and hash on every call)
    read: dict[Any, Callable[..., Any]] = table if len(params) != 1 else {}

    def miss(signature: Signature, *args: Any) -> Any:
        if any(item in _TREES for item in signature):
            made = table[signature] = _on_trees(signature, lambda full, args: specialized_for(
                fn, wrt, kind, full, generic, args))
        else:
            made = table[signature] = specialized_for(fn, wrt, kind, signature, generic, args)
        if read is not table:
            read[signature[0]] = made
        return made(*args)

    specialized = _dispatcher(params, generic.__defaults__, read, miss)
    specialized.__wrapped__ = generic  # type: ignore[attr-defined]
    for attribute in ("__name__", "__qualname__", "__doc__", "__module__", "__s2sad_source__",
                      "__s2sad_checks__", "__s2sad_replay__"):
        if hasattr(generic, attribute):
            setattr(specialized, attribute, getattr(generic, attribute))
    specialized.__s2sad_specialized__ = table  # type: ignore[attr-defined]
    generic.__dict__["__s2sad_specializing__"] = specialized
    return specialized


def _dispatcher(params: tuple[str, ...], defaults: tuple[Any, ...] | None,
                table: dict[Any, Callable[..., Any]], miss: Callable[..., Any]) -> types.FunctionType:
    """``dispatch(a, b, ...)`` with the gradient's parameters: the code for the signature of
    ``(a, b, ...)``, read inline (a function call per argument would cost more than the
    specialisation saves on small problems) from ``table``, keyed by the signature, or for one
    parameter by its item.  The key is not kept while the code runs (less peak memory)."""
    listed = ", ".join(params)
    signature = ", ".join(f"({p}.shape, {p}.dtype) if {p}.__class__ is _s2sad_ndarray else {p}.__class__"
                          for p in params)
    key = signature if len(params) == 1 else f"({signature},)"
    # (its own names cannot be a parameter's: a function with a parameter _s2sad_... is not specialised)
    source = (f"def make(_s2sad_ndarray, _s2sad_table, _s2sad_miss):\n"
              f"    def dispatch({listed}):\n"
              f"        _s2sad_made = _s2sad_table.get({key})\n"
              f"        if _s2sad_made is None:\n"
              f"            return _s2sad_miss(({signature},), {listed})\n"
              f"        return _s2sad_made({listed})\n"
              f"    return dispatch\n")
    make = _FACTORIES.get(source)
    if make is None:
        namespace: dict[str, Any] = {}
        exec(compile(source, "<s2sad specialising dispatcher>", "exec"), namespace)
        make = _FACTORIES[source] = namespace["make"]
    dispatch: types.FunctionType = make(np.ndarray, table, miss)
    dispatch.__defaults__ = defaults
    return dispatch


def _on_trees(signature: Signature, make: Callable[[Signature, tuple[Any, ...]], Callable[..., Any]]
              ) -> Callable[..., Any]:
    """The code for calls of ``signature`` (which has dicts, lists or tuples): a second
    dispatcher, on what they hold (``tree_item``), with its own ``__s2sad_specialized__``
    table; ``make(signature, args)`` makes the code of a signature.  (The first dispatcher
    reads a container's type only: arrays and numbers cost no more to dispatch.)"""
    positions = [i for i, item in enumerate(signature) if item in _TREES]
    table: dict[Signature, Callable[..., Any]] = {}

    def dispatch(*args: Any) -> Any:
        full = list(signature)
        for i in positions:
            full[i] = tree_item(args[i])
        key = tuple(full)
        made = table.get(key)
        if made is None:
            made = table[key] = make(key, args)
        try:
            return made(*args)
        except (TypeError, AttributeError) as error:
            _refuse_numbers_read_as_array(error, [args[i] for i in positions])
            raise

    dispatch.__s2sad_specialized__ = table  # type: ignore[attr-defined]
    return dispatch


def _refuse_numbers_read_as_array(error: Exception, containers: list[Any]) -> None:
    """Refuse, at the user's line, a list or tuple of numbers that a NumPy function reads as
    an array (``np.arctan(x)``) where the rule's gradient, in the generated code itself, takes
    it as it is (``1.0 + x ** 2``) and failed with ``error``."""
    where = failing_generated_line(error.__traceback__)
    if where is not None and any(isinstance(c, (list, tuple)) and c and all(v.__class__ in _LEAVES for v in c)
                                 for c in containers):
        raise WrtError(f"{error}: the gradient code takes a list or tuple of numbers passed to the function "
                       f"as it is, where NumPy read it as an array; pass it as an array "
                       f"(np.asarray(...))", where) from None


def specialized_for(fn: types.FunctionType, wrt: Any, kind: str, signature: Signature,
                    generic: Callable[..., Any], args: tuple[Any, ...] = ()) -> Callable[..., Any]:
    """The code that runs a call of this signature: ``generic`` (the generated ``kind`` of
    ``fn``, or its hvp: the jvp of its gradient) where nothing is known, for other libraries'
    arrays, or once ``fn`` has changed; else the code specialised to it.  For PyTorch tensors
    or JAX arrays (among ``args``, the call's), a gradient's ``generic`` rebound to their
    library."""
    from .rules.shapes import known_arguments  # (the rules load with the compiler)

    library = next((found for item in signature if (found := library_of(item)) is not None), None)
    if library is not None:
        if kind in ("grad", "value_and_grad") and isinstance(generic, types.FunctionType):
            return on_library(generic, library, args)
        return generic
    params = generic.__code__.co_varnames[:generic.__code__.co_argcount]
    if all(k is None for k in known_arguments(params, signature).values()) or any(
            _foreign(item) for item in signature):
        return generic
    if not hold(getattr(generic, "__s2sad_checks__", ())):
        # what the code was made from has changed since (a rebound global, say): specialising
        # now would differentiate the new function, so the generic code keeps serving
        return generic
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroGradientWarning)  # (the generic code warned)
        if kind == "hvp":  # forward over reverse: the specialised gradient's specialised jvp
            names, multiple = wrt_names(fn, wrt)
            gradient = build(fn, wrt, "grad", split=False, shapes=signature[:-1])
            return build(gradient, names if multiple else names[0], "jvp", shapes=signature)
        return build(fn, wrt, kind, shapes=signature)


def _foreign(item: Any) -> bool:
    """Another library's array type (Dask, CuPy, an ndarray subclass): the generic code,
    which dispatches on the arrays it is given, serves it.  (NumPy's scalars have an
    ``__array_namespace__`` too.)"""
    return isinstance(item, type) and item is not np.ndarray and not issubclass(item, np.generic) and any(
        hasattr(item, a) for a in ("__array_function__", "__array_namespace__", "__array_ufunc__"))
