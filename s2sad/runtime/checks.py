"""What generated code checks at run time: that the arguments it differentiates with
respect to are floating point, and that the writes it follows into arrays are the ones
NumPy makes."""
from __future__ import annotations

import dataclasses
import linecache
import random
from typing import Any

import numpy as np

from ..errors import Location, NonDifferentiableInputError, S2SADError, WrtError, user_line
from .foreign import is_foreign
from .trees import CONTAINERS


#: Attributes of arrays that carry no gradient (``x.shape`` and friends).
NONDIFF_ATTRIBUTES: frozenset[str] = frozenset(["shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides"])


def check_wrt(x: Any, name: str) -> None:
    """Refuse a gradient with respect to an integer or boolean value (a complex one has
    autograd's gradient: d/d(real part) - i d/d(imaginary part)).

    Tuples, lists and dicts are checked leaf by leaf.
    """
    if type(x) is float or type(x) is np.ndarray and x.dtype.kind in "fc":
        return
    if isinstance(x, CONTAINERS):
        items = x.items() if isinstance(x, dict) else enumerate(x)
        for key, value in items:
            check_wrt(value, f"{name}[{key!r}]")
        _refuse_fields(x, name)
        return
    kind = np.asarray(x).dtype.kind if isinstance(x, (np.ndarray, np.generic)) else (
        np.dtype(x.dtype).kind if is_foreign(x) else None)
    if kind in ("f", "c"):
        return
    if kind is None and isinstance(x, (float, complex)):
        return
    refuse_other_library(x, name)
    if dataclasses.is_dataclass(x):
        raise NonDifferentiableInputError(
            f"cannot differentiate with respect to '{name}': it is the dataclass "
            f"{type(x).__name__}, and s2sad builds gradients of tuples, lists, dicts and named "
            f"tuples only; declare it as a typing.NamedTuple (its fields are read the same way, "
            f"and its gradient is one of its type), or pass the arrays it holds")
    raise NonDifferentiableInputError(
        f"cannot differentiate with respect to '{name}': it is "
        f"{type(x).__name__}{'' if kind is None else ' of dtype ' + str(x.dtype)}; "
        f"pass a float or complex value (for example {name}=float(...) or an array with "
        f".astype(float))"
    )


def check_wrt_of(fn: Any, x: Any, name: str) -> None:
    """:func:`check_wrt`, its error located at the definition of ``fn``, the function
    differentiated, where no generated code runs to place it (as grad's checks are placed)."""
    try:
        check_wrt(x, name)
    except S2SADError as exc:
        code = getattr(fn, "__code__", None)
        if exc.location is None and code is not None:
            exc.location = Location(code.co_filename, code.co_firstlineno, 1)
        raise


def check_fields(x: Any, name: str) -> None:
    """Refuse a named tuple to differentiate with respect to (in ``x``, or ``x`` itself) with a
    field named like an array attribute that carries no gradient (``shape``, ``size``...):
    generated code reads ``p.shape`` as that attribute."""
    if isinstance(x, CONTAINERS):
        for key, value in (x.items() if isinstance(x, dict) else enumerate(x)):
            check_fields(value, f"{name}[{key!r}]")
        _refuse_fields(x, name)


def _refuse_fields(x: Any, name: str) -> None:
    for i, field in enumerate(getattr(x, "_fields", ()) if isinstance(x, tuple) else ()):
        if field in NONDIFF_ATTRIBUTES:
            raise NonDifferentiableInputError(
                f"cannot differentiate with respect to '{name}': s2sad reads '.{field}' as the array "
                f"attribute, which carries no gradient, not as the field '{field}' of "
                f"{type(x).__name__}; rename the field, or pass {name}[{i}] as an argument of its own")


def refuse_other_library(x: Any, name: str) -> None:
    """Refuse a PyTorch tensor or JAX array in NumPy code: only the specialising dispatcher
    sends them to the code rebound to their library (s2sad.array_api)."""
    from ..array_api import library_of

    library = library_of(type(x))
    if library is not None:
        raise S2SADError(
            f"'{name}' is a {library} array, but this gradient runs NumPy's code: {library} arrays "
            f"are differentiated by grad(f) and value_and_grad(f) of a plain function with "
            f"specialisation on (the default), not by jvp, vjp or hvp, nor with specialize=False, "
            f"has_aux, jit, argnums, "
            f"*args, or for a method or functools.partial")


def check_tangent(t: Any, x: Any, name: str) -> Any:
    """The tangent ``t`` of argument ``x``, refused unless shaped like it; a number is the same
    in every direction (made an array of x's shape, which the tangent code reads as one)."""
    if isinstance(x, CONTAINERS):  # (a tree's leaves meet their tangents where the code reads them)
        check_fields(x, name)
        return t
    try:
        shape = np.shape(t)
    except ValueError:  # a ragged tuple
        shape = None
    if shape == np.shape(x):  # (a list or tuple of numbers for an array: the array it spells)
        return np.asarray(t, dtype=np.result_type(x, float)) if isinstance(x, np.ndarray) and isinstance(
            t, (list, tuple)) else t
    if shape != ():
        raise WrtError(f"the tangent of '{name}' has shape {shape}, but '{name}' has shape "
                       f"{np.shape(x)}; pass one tangent per wrt argument, shaped like it (a tuple "
                       f"of tangents for several)")
    return np.full(np.shape(x), t, dtype=np.result_type(x, t))


def check_wrt_item(container: Any, key: Any, name: str) -> None:
    """``check_wrt(container[key], name)`` for an argument passed through ``*args`` (an index)
    or ``**kwargs`` (a key), which must have been passed."""
    if isinstance(key, int) and key >= len(container):
        raise WrtError(f"the gradient with respect to {name} was asked for, but only {len(container)} "
                       f"argument(s) were passed through *{name.split('[')[0]}")
    if isinstance(key, str) and key not in container:
        raise WrtError(f"the gradient with respect to {name} was asked for, but no keyword argument "
                       f"{key}= was passed")
    check_wrt(container[key], name)


def check_assignment_order(x: Any, index: Any, v: Any, where: str) -> None:
    """Refuse ``x[index] = v``, with ``v`` a view of ``x``, when NumPy's in-place assignment
    differs from assigning a copy of ``v`` (what s2sad differentiates).

    NumPy copies some overlapping one-dimensional assignments element by element, so that
    later elements read values it has already overwritten (``x[::2] = x[:3]``).  The check
    repeats the assignment on numbered elements laid out like ``x``'s memory (NumPy copies
    elements of one dtype as bytes, so unsigned integers of the same size stand in).
    """
    if type(x) is not np.ndarray or type(v) is not np.ndarray or not np.shares_memory(x, v):
        return
    low, high = _byte_bounds(x)
    v_low, v_high = _byte_bounds(v)
    numbers = np.dtype(f"u{x.itemsize}") if x.itemsize in (1, 2, 4, 8) else x.dtype
    fits = numbers.kind == "u" and x.size - 1 <= np.iinfo(numbers).max or (
        numbers.kind in "fc" and x.size <= 2 ** (np.finfo(numbers).nmant + 1))
    if x.dtype != v.dtype or x.dtype.hasobject or not fits or v_low < low or v_high > high:
        why = "s2sad cannot tell whether NumPy's in-place assignment reads elements it has already overwritten"
    else:
        scratch = np.zeros(high - low, np.uint8)

        def laid_out(a: np.ndarray) -> np.ndarray:
            return np.ndarray(a.shape, numbers, scratch, a.ctypes.data - low, a.strides)

        numbered, value = laid_out(x), laid_out(v)
        numbered[...] = np.arange(x.size).reshape(x.shape)
        copied = numbered.copy()
        copied[index] = value.copy()
        numbered[index] = value
        if np.array_equal(numbered, copied):
            return
        why = "NumPy's in-place assignment reads elements it has already overwritten, which s2sad does not follow"
    _refuse(where, f"the value assigned shares memory with the array it is assigned into, and "
                   f"{why}; assign a copy of the value (... = (...).copy())")


def _byte_bounds(a: np.ndarray) -> tuple[int, int]:
    """The first and one-past-the-last byte addresses of ``a``'s elements."""
    low = high = a.ctypes.data
    for n, stride in zip(a.shape, a.strides):
        if stride < 0:
            low += (n - 1) * stride
        else:
            high += (n - 1) * stride
    return low, high + a.itemsize


def check_float_write(x: Any, where: str, v: Any = None) -> None:
    """Refuse ``x[i] = v``, with ``v`` carrying a gradient, when ``x`` is an array of a dtype
    that is not floating point: the write converts ``v`` (an integer truncates it), so
    passing ``v`` its gradient would be silently wrong.  ``where`` is "file:line:col".  An
    integer ``v`` (one unpacked beside values that carry a gradient) carries none."""
    if isinstance(v, (bool, int, np.integer, np.bool_)) or type(v) is np.ndarray and v.dtype.kind in "biu":
        return
    if type(x) is np.ndarray:
        if x.dtype.kind in "fcO":
            return
    elif not is_foreign(x) or np.dtype(x.dtype).kind in "fcO":
        return
    from ..errors import Location, NoGradientRuleError

    filename, line, column = where.rsplit(":", 2)
    raise NoGradientRuleError(
        f"a value that carries a gradient is written into an array of dtype {x.dtype}, which "
        f"converts it, so it has no gradient; create the array with a float dtype (for example "
        f"np.zeros(n) or dtype=float), or write stop_gradient(...) of the value",
        Location(filename, int(line), int(column)))


def check_replayable(receiver: Any, where: str) -> None:
    """A method of an object known only as the code runs, in code whose forward pass runs again
    (a callee's vjp, when its caller is differentiated again): refused, at ``where``
    ("file:line:col"), when the object is a random number generator, whose draws would differ
    the second time."""
    if not isinstance(receiver, (np.random.Generator, np.random.RandomState, np.random.BitGenerator,
                                 random.Random)):
        return
    from ..errors import NoGradientRuleError

    filename, line, column = where.rsplit(":", 2)
    raise NoGradientRuleError(
        f"this function's forward pass runs again when its caller is differentiated again (a "
        f"Hessian-vector product, a gradient of a gradient, a second pullback), and this call of a "
        f"method of a {type(receiver).__name__} would then draw other random numbers; draw them in the "
        f"function you differentiate and pass them in (eps = rng.standard_normal(n), then "
        f"mu + sigma * eps)", Location(filename, int(line), int(column)))


def check_number(x: Any, where: str, refusal: str) -> None:
    """``x op= v`` where x may be shared (a view, another name's object, an argument): a
    new value when x is a number, as s2sad writes it; for an array, which would change in
    place, ``refusal`` (at ``where``, "file:line:col")."""
    if isinstance(x, (int, float, complex, np.generic)):
        return
    from ..errors import Location, UnsupportedSyntaxError

    filename, line, column = where.rsplit(":", 2)
    raise UnsupportedSyntaxError(refusal, Location(filename, int(line), int(column)))


def view_flag(base: Any, view: Any, where: str, refusal: str) -> bool:
    """Whether ``view``, taken from ``base`` by indexing, ``.T``, a transpose or a reshape,
    shares ``base``'s memory, so that a write through either changes the other.  A number,
    or an array NumPy copied (fancy indexing, a reshape that copies), does not.  When ``base``
    is no array (a list whose item ``view`` may be), ``refusal`` at ``where`` ("file:line:col")."""
    if isinstance(view, (bool, int, float, complex, np.generic)):
        return False
    if type(base) is np.ndarray and type(view) is np.ndarray:
        return bool(np.may_share_memory(base, view))
    _refuse(where, refusal)
    return False


def check_out(out: Any, value: Any, where: str, call: str) -> None:
    """``call(..., out=z)`` written ``z = call(...)``: faithful only when NumPy would store the
    result as it is, into a float array of its shape and dtype."""
    if (type(out) is np.ndarray and out.dtype.kind == "f" and np.shape(value) == out.shape
            and np.result_type(value) == out.dtype):
        return
    what = f"an array of dtype {out.dtype} and shape {out.shape}" if type(out) is np.ndarray \
        else f"a {type(out).__name__}"
    _refuse(where, f"{call}(..., out=...) writes into {what}, which would convert or broadcast "
                   f"the result of dtype {np.result_type(value)} and shape {np.shape(value)}; "
                   f"write the result to a new name (z = {call}(...)) and convert it explicitly")


def _refuse(where: str, message: str) -> None:
    from ..errors import Location, UnsupportedSyntaxError

    filename, line, column = (where.rsplit(":", 2) + ["", ""])[:3]
    if not (line.isdigit() and column.isdigit()):  # (not "file:line:col": said in the message)
        raise UnsupportedSyntaxError(f"{where}: {message}")
    raise UnsupportedSyntaxError(message, Location(filename, int(line), int(column)))


def place(where: str) -> Location:
    """The Location that generated code passes a run-time check as ``"file:line:column"``; in
    code s2sad generated (met when that code is differentiated again), the user's line it
    comes from."""
    filename, line, column = where.rsplit(":", 2)
    loc = Location(filename, int(line), int(column), linecache.getline(filename, int(line)))
    return user_line(loc) or loc


def handler_index(attempt: Any, *handlers: Any) -> int:
    """Which branch of ``try: ... except ...`` runs: 0 if ``attempt()`` raises nothing, else
    one more than the index of the first of ``handlers`` (exception classes, or tuples of
    them) that catches what it raised; what none catches propagates, as in Python."""
    try:
        attempt()
    except BaseException as exc:
        for i, caught in enumerate(handlers):
            if isinstance(exc, caught):
                return i + 1
        raise
    return 0
