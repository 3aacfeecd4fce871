"""A differential fuzzer for s2sad (GitHub issue 5).

- :mod:`tests.fuzz.generator`: a hypothesis strategy, :func:`programs`, drawing random valid
  Python/NumPy programs (module source text) from the subset s2sad supports;
- :mod:`tests.fuzz.oracle`: runs one program through ``s2sad.grad`` and through central
  finite differences of the very same source (``stop_gradient`` replayed at its recorded
  values) and classifies it as passed, rejected, invalid or WRONG;
- ``python -m tests.fuzz --programs N --seed S``: an extended campaign.

tests/test_fuzz.py runs a fixed, seeded budget of programs in CI.
"""
