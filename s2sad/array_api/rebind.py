"""Generated code rebound to another array library: the same code object, with ``np``, the
helpers and the callees it reads replaced by their counterparts for that library.

A generated function reads ``np`` and the helpers from its closure cells, and the user's
module from its globals.  Rebound, its cells hold the library's :class:`Namespace` and the
helpers' variants (:mod:`.helpers`), and its globals are read through :class:`Globals`,
which translates a NumPy module or function when the code reads it.  Functions it calls
(callees' generated code, the user's own functions, helpers written in NumPy's spellings)
are rebound in the same way; any other helper refuses, naming itself and the library.
"""
from __future__ import annotations

import builtins
import sys
import types
import weakref
from typing import Any, Callable

import numpy as np

from ..errors import S2SADError, failing_generated_line
from .helpers import VARIANTS, Helpers
from .namespace import Namespace, UnmappedFunctionError, Unmapped

#: The root module of each supported library's array types -> the library.
_ROOTS = {"torch": "torch", "jax": "jax", "jaxlib": "jax"}
#: The helpers whose NumPy code runs on the library once rebound (every np function they
#: call is one the Namespace translates), and those that call no NumPy function at all.
PORTABLE = frozenset({"as_column", "branch_mask", "check_wrt_item", "clip_mask", "clip_max_mask",
                      "clip_min_mask", "concat_grad", "dot_grad_lhs", "dot_grad_rhs", "pow_slope",
                      "reshape_back", "safe_divide", "select_grad", "transpose_grad", "unpack_grad"})
NEUTRAL = frozenset({"add_grads", "concat", "stop_gradient", "rebuild"})

_libraries: dict[str, tuple[Namespace, Helpers]] = {}
_rebound: "weakref.WeakKeyDictionary[types.FunctionType, dict[str, types.FunctionType]]" = (
    weakref.WeakKeyDictionary())


def library_of(kind: Any) -> str | None:
    """``"torch"`` or ``"jax"`` for the class of a PyTorch tensor or a JAX array, else None
    (decided by the class's module: neither library is imported here)."""
    if not isinstance(kind, type):
        return None
    library = _ROOTS.get(kind.__module__.partition(".")[0])
    if library is None or not issubclass(kind, _array_type(library)):
        return None
    return library


def _array_type(library: str) -> type:
    module = sys.modules[library]
    return module.Tensor if library == "torch" else module.Array  # type: ignore[no-any-return]


def on_library(fn: types.FunctionType, library: str, args: tuple[Any, ...]) -> Callable[..., Any]:
    """``fn`` (generated code) rebound to ``library``, whose arrays are among ``args``; an
    operation of the generated code itself that the library's arrays lack (``y.copy()`` of a
    torch tensor, an item assignment into a JAX array) refused at the user's line."""
    namespace, _ = _library(library, args)
    code = rebound(fn, namespace)

    def on_arrays(*args: Any, **kwargs: Any) -> Any:
        try:
            return code(*args, **kwargs)
        except (AttributeError, TypeError) as error:
            where = failing_generated_line(error.__traceback__)
            if where is None:
                raise
            what = str(error).split(". ")[0]  # (JAX's message goes on with JAX's advice)
            raise UnmappedFunctionError(f"{what}: this operation of the generated code is not translated "
                                        f"to {namespace.library} arrays by s2sad; pass NumPy arrays",
                                        where) from None

    on_arrays.__wrapped__ = code  # type: ignore[attr-defined]
    return on_arrays


def _library(library: str, args: tuple[Any, ...]) -> tuple[Namespace, Helpers]:
    known = _libraries.get(library)
    if known is None:
        try:
            from array_api_compat import array_namespace
        except ImportError:
            raise S2SADError(f"gradients on {library} arrays run through array-api-compat, which is not "
                             f"installed: pip install \"s2sad[array-api]\"") from None
        array_type = _array_type(library)
        sample = next(a for a in args if isinstance(a, array_type))
        namespace = Namespace(array_namespace(sample), library, array_type)
        known = _libraries[library] = (namespace, Helpers(namespace))
    return known


def rebound(fn: types.FunctionType, namespace: Namespace) -> types.FunctionType:
    """``fn`` with its cells and globals translated to ``namespace``'s library (made once)."""
    per_library = _rebound.setdefault(fn, {})
    out = per_library.get(namespace.library)
    if out is None:
        out = per_library[namespace.library] = _rebind(fn, namespace)
    return out


def _rebind(fn: types.FunctionType, namespace: Namespace) -> types.FunctionType:
    cells = []
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # (an empty cell: a name the function assigns later)
            cells.append(cell)
            continue
        translated = translate(value, namespace)
        cells.append(cell if translated is value else types.CellType(translated))
    out = types.FunctionType(fn.__code__, Globals(fn.__globals__, namespace), fn.__name__,
                             fn.__defaults__, tuple(cells) or None)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__qualname__, out.__module__, out.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    out.__dict__.update(fn.__dict__)
    return out


class Globals(dict):  # type: ignore[type-arg]
    """A function's globals as its rebound code reads them: the module's, live, each value
    translated to the library (only ``__builtins__`` is stored: a name not found in the
    module is a builtin)."""

    def __init__(self, module: dict[str, Any], namespace: Namespace) -> None:
        super().__init__(__builtins__=module.get("__builtins__", builtins))
        self.module = module
        self.namespace = namespace

    def __getitem__(self, name: str) -> Any:
        return translate(self.module[name], self.namespace)


def translate(value: Any, namespace: Namespace) -> Any:
    """What rebound code reads for ``value``: the library's counterpart of a NumPy module or
    function, of a helper or of generated code; ``value`` itself for data and other objects."""
    if value is np:
        return namespace
    kind = type(value)
    if kind is types.ModuleType:
        return _numpy_module(value, namespace)
    if kind is types.FunctionType:
        return _function(value, namespace)
    if kind is np.ufunc or callable(value) and (getattr(value, "__module__", None) or "").startswith("numpy"):
        return _numpy_function(value, namespace)
    if callable(value) and kind.__module__.startswith("s2sad."):  # a recursive call, a method of self
        return _refusing(f"{getattr(value, '__name__', kind.__name__)} (a recursive call or a method "
                         f"of self, chosen when called)", namespace)
    return value


def _numpy_module(module: types.ModuleType, namespace: Namespace) -> Any:
    name = module.__name__
    if name.startswith("numpy."):
        return getattr(namespace, name[6:], None) or Unmapped(namespace.library, "np." + name[6:])
    return module


def _numpy_function(fun: Any, namespace: Namespace) -> Any:
    module = getattr(fun, "__module__", None) or "numpy"
    if module != "numpy":
        return _refusing(f"np.{module[6:]}.{fun.__name__}", namespace)
    try:
        return getattr(namespace, fun.__name__)
    except UnmappedFunctionError:
        return _refusing(f"np.{fun.__name__}", namespace)


def _function(fn: types.FunctionType, namespace: Namespace) -> Any:
    """A helper's variant (or the helper rebound, or refused); any other function rebound."""
    module = fn.__module__ or ""
    if not module.startswith("s2sad.") or fn.__dict__.get("__s2sad_generated__"):
        return rebound(fn, namespace)
    name = fn.__name__
    if name in VARIANTS:
        return getattr(_libraries[namespace.library][1], name)
    if name in PORTABLE:
        return rebound(fn, namespace)
    if name in NEUTRAL:
        return fn
    return _refusing(f"s2sad's helper {name}", namespace)


def _refusing(what: str, namespace: Namespace) -> Callable[..., Any]:
    """A stand-in for ``what`` that raises, when called, that it is not translated."""
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise namespace.refuse(what)

    refused.__name__ = refused.__qualname__ = what.split(" ")[0]
    return refused
