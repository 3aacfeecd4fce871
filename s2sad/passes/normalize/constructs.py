"""The Python operators s2sad lowers to primitives, and the constructs it refuses, with advice."""
from __future__ import annotations

import operator
import warnings
from typing import Any

import libcst as cst
import numpy as np


BINARY_OPS: dict[type, tuple[Any, str]] = {
    cst.Add: (operator.add, "add"),
    cst.Subtract: (operator.sub, "sub"),
    cst.Multiply: (operator.mul, "mul"),
    cst.Divide: (operator.truediv, "div"),
    cst.Power: (operator.pow, "pow"),
    cst.MatrixMultiply: (operator.matmul, "matmul"),
    cst.Modulo: (operator.mod, "mod"),
    cst.FloorDivide: (operator.floordiv, "floordiv"),
}
AUGMENTED_OPS: dict[type, type] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.PowerAssign: cst.Power,
    cst.MatrixMultiplyAssign: cst.MatrixMultiply, cst.ModuloAssign: cst.Modulo,
    cst.FloorDivideAssign: cst.FloorDivide,
}
UNARY_OPS: dict[type, tuple[Any, str]] = {
    cst.Minus: (operator.neg, "neg"),
    cst.Plus: (operator.pos, "pos"),
}
#: Statements and expressions s2sad does not differentiate, with what to write instead.
UNSUPPORTED: dict[type, str] = {
    cst.Try: ("'try' statements are not supported; handle errors outside the differentiated function "
              "('try:' ... 'finally:' ... is, where neither part returns, breaks or continues)"),
    cst.With: "only 'with np.errstate(...)' and 'with warnings.catch_warnings()' are supported, "
              "without 'as' and with literal arguments; move this context manager outside the "
              "differentiated function",
    cst.ClassDef: "class definitions inside a differentiated function are not supported; define "
                  "the class at module level",
    cst.Global: "'global' is not supported; pass the value as an argument and return the result",
    cst.Nonlocal: "'nonlocal' is not supported; pass the value as an argument and return the result",
    cst.Import: "an import here is not supported; import at the top of the function or at module level",
    cst.ImportFrom: "an import here is not supported; import at the top of the function or at "
                    "module level",
    cst.Yield: "generators ('yield') cannot be differentiated; return a value instead",
    cst.Await: "'await' is not supported; differentiate a synchronous function",
    cst.SetComp: "a set of values that carry a gradient is not supported (a set has no order to "
                 "give gradients back in); build a list, or a dict comprehension",
    cst.Lambda: "a lambda is differentiated bound to a name ('f = lambda v: ...'), called where it "
                "stands, passed to map, functools.reduce or sorted, or passed to a named parameter of a "
                "Python function; here, define a function with 'def' and call it by its name, or pass "
                "the variables it reads as arguments",
    cst.NamedExpr: "the walrus operator ':=' is not supported; assign on its own line",
    cst.Set: "set values are not supported",
}
#: NumPy functions that write into their first argument in place (s2sad follows ``x[i] = v`` and
#: ``np.add.at`` only), with what to write instead.
_IN_PLACE = "{name}(...) changes its first argument in place, which s2sad does not follow; {advice}"
IN_PLACE_FUNCTIONS: dict[Any, str] = {fun: _IN_PLACE.format(name=name, advice=advice) for fun, name, advice in (
    (np.put_along_axis, "np.put_along_axis", "write the values by index on a copy: "
                        "'out = arr.copy(); out[np.arange(n)[:, None], idx] = values' for axis=1 of a 2-d arr"),
    (np.put, "np.put", "write the values by flat index on a copy: 'out = a.copy(); out.flat[ind] = v' "
                       "becomes 'out = a.ravel().copy(); out[ind] = v; out = out.reshape(a.shape)'"),
    (np.putmask, "np.putmask", "select with 'out = np.where(mask, values, a)'"),
    (np.place, "np.place", "select with 'out = a.copy(); out[mask] = vals'"),
    (np.copyto, "np.copyto", "assign the new array: 'dst = np.where(where, src, dst)', or 'dst = src * np.ones_like(dst)'"),
)}
#: Context managers a ``with`` may open around differentiated code: they change which warnings
#: NumPy gives, not values; the body is differentiated as if the ``with`` were not there.
CONTEXT_MANAGERS: tuple[Any, ...] = (np.errstate, warnings.catch_warnings)
