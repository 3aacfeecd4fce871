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
#: Context managers a ``with`` may open around differentiated code: they change which warnings
#: NumPy gives, not values; the body is differentiated as if the ``with`` were not there.
CONTEXT_MANAGERS: tuple[Any, ...] = (np.errstate, warnings.catch_warnings)
