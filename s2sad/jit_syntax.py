"""Powers in the code numba is given (``jit=True``): where numba's ``**`` differs from Python's.

numba computes an integer to an integer power in integers, so ``n ** -1`` of an int ``n``
is 0 where Python gives a float; and it compiles ``x ** 2`` as a general power, a third of a
scalar gradient's compile.  ``x ** y`` becomes a call of :func:`s2sad.jit_runtime.power`
(Python's and NumPy's results, chosen by the operands' numba types) unless the exponent is a
literal numba gets right: a float, or an int that is not negative; ``x ** 2`` a call of
:func:`s2sad.jit_runtime.square`.  (No numba here: :mod:`s2sad.jit` rewrites before it
imports numba's implementations.)
"""
from __future__ import annotations

import ast

SQUARE = "_jit_square"  # the name compiled code calls for x ** 2 (jit_runtime.square)
POWER = "_jit_power"  # and for other powers (jit_runtime.power)


def _native(exponent: ast.expr) -> bool:
    """A literal exponent numba's own power computes as Python does."""
    if not isinstance(exponent, ast.Constant):
        return False
    value = exponent.value
    return type(value) is float or type(value) is int and value >= 0


def power_call(node: ast.BinOp) -> ast.expr:
    """``node``, a ``**``, as numba is to compile it."""
    right = node.right
    if isinstance(right, ast.Constant) and type(right.value) is int and right.value == 2:
        call = ast.Call(ast.Name(SQUARE, ast.Load()), [node.left], [])
    elif _native(right):
        return node
    else:
        call = ast.Call(ast.Name(POWER, ast.Load()), [node.left, right], [])
    return ast.copy_location(call, node)
