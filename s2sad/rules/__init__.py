"""Differentiation rules: the registry and the built-in declarations."""
from . import numpy_rules, runtime_rules
from .numpy_rules import NONDIFF_ATTRIBUTES
from .registry import REGISTRY, Rule, Template, is_atomic

__all__ = ["REGISTRY", "Rule", "Template", "NONDIFF_ATTRIBUTES", "is_atomic", "numpy_rules"]
