"""Pass 4: normalize the body to A-normal form.

Each statement of the result applies one primitive to variables and constant
code.  Temporaries get readable names (``exp_z``, ``sum_e``).  A variable that
is assigned again gets a new version (``h``, ``h_2``), so that every value the
adjoint may read is still there: straight-line code needs no tape.

Expressions that carry no gradient by construction -- comparisons, calls to
``stop_gradient`` and to declared non-differentiable functions, ``x.shape`` --
are kept whole, as the user wrote them.

``Normalizer`` (normalizer.py) holds the state of one function's lowering; each
kind of statement and expression is lowered by a mixin in its own module.
"""
from __future__ import annotations

from ...ir import Function
from ...rules.registry import Registry
from ..parse import Parsed
from ..resolve import Resolution
from .normalizer import Normalizer


def normalize(parsed: Parsed, res: Resolution, registry: Registry, callee: bool = False,
              replayed: bool = False) -> Function:
    return Normalizer(parsed, res, registry, callee, replayed).run()
