"""Random numbers: the pathwise (reparameterisation) gradients of NumPy's location-scale
samplers, and the refusal of every other sampler parameter a gradient reaches.

A sample of a location-scale family is a differentiable function of its parameters for a
fixed stream of random bits (``normal(loc, scale) = loc + scale * z``), so its derivatives
are written from the sample ``ans`` itself, never from a new draw.  The samplers are the
methods of ``np.random.Generator`` and ``np.random.RandomState`` and the functions of
``np.random`` (methods of its global RandomState).  The other samplers' parameters (shapes,
rates, probabilities, the data ``permutation`` and ``choice`` draw from) have no pathwise
gradient: a gradient reaching one is refused at the call.
"""
from __future__ import annotations

import inspect
import random
from typing import Any

import numpy as np

from .registry import RECEIVER, REGISTRY

#: For each location-scale sampler, the derivative of the sample ``ans`` with respect to each
#: parameter, in terms of ``ans`` and the parameters (the sample's shape: ``size`` may
#: broadcast the parameters, and their gradients are summed back to their shapes).
PATHWISE: dict[str, dict[str, str]] = {
    **{name: {"loc": "np.ones_like(ans)", "scale": "(ans - loc) / scale"}
       for name in ("normal", "laplace", "logistic", "gumbel")},
    "uniform": {"low": "(high - ans) / (high - low)", "high": "(ans - low) / (high - low)"},
    "exponential": {"scale": "ans / scale"},
    "lognormal": {"mean": "ans", "sigma": "ans * (np.log(ans) - mean) / sigma"},
}

#: Parameters that only say how much to draw, or how: they carry no gradient.
OPTIONS = frozenset(["size", "dtype", "out", "method", "endpoint", "replace", "axis", "shuffle",
                     "check_valid", "tol"])

_TRANSFORM = ("no pathwise gradient is defined for it; if you need one, write the sample as a "
              "differentiable transform of a standard sample (loc + scale * rng.standard_normal(size), "
              "scale * rng.standard_exponential(size), ...) or pass a constant")
#: What to write instead, for the parameters whose advice is not the transform's.
ADVICE: dict[tuple[str, str], str] = {
    ("permutation", "x"): "it permutes values, which carry no pathwise gradient there; index x with "
                          "rng.permutation(len(x)): x[rng.permutation(len(x))]",
    ("permuted", "x"): "it permutes values, which carry no pathwise gradient there; index x with "
                       "rng.permutation(len(x)): x[rng.permutation(len(x))]",
    ("choice", "a"): "it draws values, which carry no pathwise gradient there; index x with "
                     "rng.choice(len(x), k): x[rng.choice(len(x), k)]",
    ("choice", "p"): "a discrete draw has no pathwise gradient with respect to its probabilities; "
                     "pass constant probabilities",
    ("integers", "low"): "an integer sample has no gradient; pass constant bounds",
    ("integers", "high"): "an integer sample has no gradient; pass constant bounds",
    ("randint", "low"): "an integer sample has no gradient; pass constant bounds",
    ("randint", "high"): "an integer sample has no gradient; pass constant bounds",
    ("random_integers", "low"): "an integer sample has no gradient; pass constant bounds",
    ("random_integers", "high"): "an integer sample has no gradient; pass constant bounds",
}


#: The objects whose methods draw random numbers (or reseed them).
GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator, random.Random)


def draws(fun: Any) -> bool:
    """Whether calling ``fun`` draws random numbers, or changes what the next draw gives: a
    function of ``np.random`` or ``random``, or a method of a generator (``rng.normal``,
    ``np.random.Generator.normal``).  Such a call is computed once, where it stands: neither
    shared with another like it nor dropped when its value is unused."""
    owner = getattr(fun, "__self__", None)
    if isinstance(owner, GENERATORS) or getattr(fun, "__objclass__", None) in GENERATORS:
        return True
    module = getattr(fun, "__module__", None) or ""
    qualified = getattr(fun, "__qualname__", "")
    return module == "random" or module.startswith("numpy.random") or qualified.split(".")[0] in (
        "Generator", "RandomState", "BitGenerator")


#: What makes a generator's state anew from the seed it is given (np.random.seed(0),
#: np.random.default_rng(0)): code that runs again after it draws the same numbers again.
SEEDING = frozenset(map(id, (np.random.seed, np.random.default_rng, np.random.RandomState, np.random.Generator,
                             np.random.SeedSequence, np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937,
                             np.random.Philox, np.random.SFC64, random.seed, random.Random)))


#: The functions that make a generator, and its class (whose methods' rules its calls take).
GENERATOR_MAKERS = {np.random.default_rng: np.random.Generator, np.random.Generator: np.random.Generator,
                    np.random.RandomState: np.random.RandomState}


def _samplers() -> list[tuple[str, Any, str, list[str]]]:
    """(spelling, function, name, parameters after self) of each method of the generators and
    each function of np.random that is one of its global RandomState's methods."""
    out = []
    for owner, spelled in ((np.random.Generator, "np.random.Generator"), (np.random.RandomState, "np.random.RandomState")):
        for name, fun in vars(owner).items():
            if not name.startswith("_") and callable(fun):
                out.append((f"{spelled}.{name}", fun, name, list(inspect.signature(fun).parameters)[1:]))
    for name in np.random.__all__:
        fun = getattr(np.random, name)
        if getattr(fun, "__self__", None) is np.random.mtrand._rand and name in vars(np.random.RandomState):
            out.append((f"np.random.{name}", fun, name, list(inspect.signature(fun).parameters)))
    return out


#: Methods of the generators that draw no sample from their arguments (state, seeds, in place).
#: (``rand`` and ``randn`` take the dimensions one by one.)
NOT_SAMPLERS = frozenset(["seed", "set_state", "get_state", "bytes", "spawn", "shuffle", "rand", "randn"])


def _signature(fun: Any) -> str:
    """The parameter list of ``fun``, as a rule declares it (a default that is a type,
    ``dtype=np.float64``, spelled as code).  A method's ``self`` is its RECEIVER: a call on
    an instance (``rng.normal(mu)``) binds its arguments without it (Registry.rule)."""
    out, keyword_only = [], False
    for p in inspect.signature(fun).parameters.values():
        if p.name == "self":
            out.append(RECEIVER)
            continue
        if p.kind == p.KEYWORD_ONLY and not keyword_only:
            out.append("*")
            keyword_only = True
        default = p.default
        if isinstance(default, type):
            default = f"np.{default.__name__}" if default.__module__ == "numpy" else default.__name__
        elif default is not p.empty:
            default = repr(default)
        out.append(p.name if default is p.empty else f"{p.name}={default}")
    return ", ".join(out)


def _declare() -> None:
    """A rule for each sampler with a parameter a gradient could reach: the pathwise templates
    of the location-scale ones, the refusal of every other such parameter."""
    for spelled, fun, name, params in _samplers():
        data = [p for p in params if p not in OPTIONS and not p.startswith("*")]
        if not data or name in NOT_SAMPLERS:  # (nothing a gradient could reach)
            continue
        local = PATHWISE.get(name, {})
        refuse = {p: f"s2sad does not differentiate {spelled} with respect to '{p}': "
                     f"{ADVICE.get((name, p), _TRANSFORM)}" for p in data if p not in local}
        names = [RECEIVER if p == "self" else p for p in inspect.signature(fun).parameters]
        inert: dict[str, str | None] = {p: None for p in names if p in OPTIONS or p == RECEIVER}
        REGISTRY.defvjp(
            fun, _signature(fun), name=spelled, refuse=refuse or None,
            jvp={p: f"t * ({d})" for p, d in local.items()} or None,
            **inert, **{p: f"unbroadcast(g * ({d}), {p})" for p, d in local.items()})


_declare()
