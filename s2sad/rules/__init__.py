"""Differentiation rules: the registry and the built-in declarations."""
from . import (array_shapes, complex_rules, numpy2_rules, numpy_more_rules, numpy_rules, random_rules, runtime_rules,
               view_rules)
from .numpy_rules import NONDIFF_ATTRIBUTES
from .random_rules import GENERATOR_MAKERS, SEEDING, draws
from .registry import REGISTRY, Rule, Template, is_atomic

#: The rules s2sad ships (users may add their own with s2sad.defvjp).
BUILTIN_RULES: frozenset[int] = frozenset(REGISTRY.rules)
BUILTIN_NONDIFF: frozenset[int] = frozenset(REGISTRY.nondiff)
#: SciPy's rules, loaded when s2sad first looks up a rule after SciPy has been imported.
REGISTRY.lazy.append(("scipy", "s2sad.rules.scipy_rules"))

__all__ = ["REGISTRY", "BUILTIN_RULES", "BUILTIN_NONDIFF", "Rule", "Template", "NONDIFF_ATTRIBUTES",
           "is_atomic", "numpy_rules", "draws", "SEEDING", "GENERATOR_MAKERS"]
