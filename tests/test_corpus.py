"""Gradients of every corpus function (tests/corpus.py) against central finite differences.

For every case the gradient of every float argument (and of every float leaf of a
tuple/list/dict argument) must match central finite differences in float64, have
the argument's type, shape and dtype (the same container type and keys for a
container), and the gradient call must leave its inputs unchanged.  Generating
the code is deterministic: a fresh process, with a different string-hash seed,
generates the same text.

Finite differences hold ``stop_gradient`` at its value at the unperturbed point
(they replay its recorded outputs), which is what the gradient of a function
that calls it means.

Cases marked ``xfail`` in the corpus fail today; they are strict, so one that
starts to pass is reported.
"""
from __future__ import annotations

import copy
import inspect
import json
import os
import re
import subprocess
import sys
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np
import pytest

import corpus
import s2sad
from gradcheck import numerical_grad

RTOL = 1e-5
ATOL = 1e-7
HERE = os.path.dirname(os.path.abspath(__file__))


# --- helpers --------------------------------------------------------------------------------------


def _marks(case: corpus.Case, *, errors_only: bool = False) -> list[Any]:
    """The strict xfail mark of a failing case; ``errors_only`` skips cases failing by wrong values."""
    raises = case.raises if isinstance(case.raises, tuple) else (case.raises,)
    if case.xfail is None or (errors_only and all(issubclass(r, AssertionError) for r in raises)):
        return []
    return [pytest.mark.xfail(strict=True, reason=case.xfail, raises=case.raises)]


def _params(**kw: Any) -> list[Any]:
    return [pytest.param(c, id=c.id, marks=_marks(c, **kw)) for c in corpus.CASES]


@contextmanager
def _failing_for_its_reason(case: corpus.Case) -> Iterator[None]:
    """An expected s2sad error must also carry the expected message, or the test fails outright."""
    try:
        yield
    except s2sad.S2SADError as exc:
        if case.xfail is not None and case.match is not None and not re.search(case.match, str(exc)):
            pytest.fail(f"expected to fail because {case.xfail!r} (message matching {case.match!r}), "
                        f"but failed with {type(exc).__name__}: {exc}", pytrace=False)
        raise


@contextmanager
def _zero_gradient_warnings(case: corpus.Case) -> Iterator[None]:
    """Allow the ZeroGradientWarning of a case that declares arguments reached only through stop_gradient."""
    with warnings.catch_warnings():
        if case.zero:
            warnings.filterwarnings("ignore", category=s2sad.ZeroGradientWarning)
        yield


def _gradient(case: corpus.Case, args: tuple[Any, ...], wrt: tuple[int, ...]) -> tuple[Any, ...]:
    with _failing_for_its_reason(case), _zero_gradient_warnings(case):
        return s2sad.grad(case.fn, wrt)(*args)


def _leaves(x: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, leaf) for every float leaf of ``x``."""
    if isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            yield from _leaves(v, path + (i,))
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, path + (k,))
    elif corpus.has_float(x):
        yield path, x


def _get(x: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        x = x[p]
    return x


def _replace(x: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of container ``x`` (copied along ``path`` only) with the leaf at ``path`` set to ``value``."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(x, dict):
        out = dict(x)
        out[head] = _replace(x[head], rest, value)
        return out
    items = list(x)
    items[head] = _replace(x[head], rest, value)
    return type(x)(items)


def _where(case: corpus.Case, argnum: int, path: tuple[Any, ...]) -> str:
    return case.params[argnum] + "".join(f"[{p!r}]" for p in path)


def _assert_same(a: Any, b: Any, what: str) -> None:
    """``a`` and ``b`` have the same structure, types and values (for the no-mutation checks)."""
    assert type(a) is type(b), f"{what}: {type(a).__name__} became {type(b).__name__}"
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b), f"{what}: length changed"
        for i, (u, v) in enumerate(zip(a, b)):
            _assert_same(u, v, f"{what}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{what}: keys changed"
        for k in a:
            _assert_same(a[k], b[k], f"{what}[{k!r}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), f"{what} changed"
    else:
        assert a == b, f"{what} changed"


class _Replay:
    """Calls the corpus function with ``stop_gradient`` returning the values it returned at ``args``."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.recorded: list[Any] = []

        def record(x: Any) -> Any:
            self.recorded.append(copy.deepcopy(x))
            return x

        with self._stop_gradient_is(record):
            fn(*copy.deepcopy(args))

    @contextmanager
    def _stop_gradient_is(self, replacement: Callable[[Any], Any]) -> Iterator[None]:
        original = corpus.stop_gradient
        corpus.stop_gradient = replacement
        try:
            yield
        finally:
            corpus.stop_gradient = original

    def __call__(self, *args: Any) -> Any:
        calls = iter(range(len(self.recorded) + 1))

        def replay(x: Any) -> Any:
            i = next(calls)
            assert i < len(self.recorded), (
                "a perturbed input took a different path: stop_gradient was called more often; "
                "choose inputs away from the branch boundary")
            return copy.deepcopy(self.recorded[i])

        with self._stop_gradient_is(replay):
            out = self.fn(*args)
        assert next(calls) == len(self.recorded), (
            "a perturbed input took a different path: stop_gradient was called fewer times; "
            "choose inputs away from the branch boundary")
        return out


def _check_gradient(case: corpus.Case, argnum: int, path: tuple[Any, ...], g: Any, x: Any,
                    f: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """Gradient ``g`` of the (sub)argument ``x`` found at ``path`` in argument ``argnum``."""
    where = f"gradient of {case.name} for {_where(case, argnum, path)}"
    if isinstance(x, (tuple, list, dict)):
        assert type(g) is type(x), f"{where} is a {type(g).__name__}, not a {type(x).__name__}"
        if isinstance(x, dict):
            assert set(g) == set(x), f"{where} has keys {sorted(g)}, not {sorted(x)}"
            keys = list(x.keys())
        else:
            assert len(g) == len(x), f"{where} has {len(g)} items, not {len(x)}"
            keys = list(range(len(x)))
        for k in keys:
            if corpus.has_float(x[k]):
                _check_gradient(case, argnum, path + (k,), g[k], x[k], f, args)
        return
    if isinstance(x, float):
        assert isinstance(g, float), f"{where} is {type(g).__name__}, not a float"
    else:
        assert isinstance(g, np.ndarray), f"{where} is {type(g).__name__}, not an array"
        assert g.shape == x.shape, f"{where} has shape {g.shape}, not {x.shape}"
        assert g.dtype == x.dtype, f"{where} has dtype {g.dtype}, not {x.dtype}"

    def of_leaf(leaf: Any) -> Any:
        moved = list(args)
        moved[argnum] = _replace(args[argnum], path, leaf)
        return f(*moved)

    expected = numerical_grad(of_leaf, [x], 0)
    np.testing.assert_allclose(g, expected, rtol=RTOL, atol=ATOL, err_msg=where)


# --- the corpus itself ------------------------------------------------------------------------------


def test_corpus_size_and_ids():
    fns = corpus.functions()
    assert len(fns) >= 100
    assert sum(1 for f in fns if any(c.group == "pending" for c in corpus.CASES if c.fn is f)) >= 25
    ids = [c.id for c in corpus.CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    assert len({f.__name__ for f in fns}) == len(fns), "function names must be unique"
    for c in corpus.CASES:
        params = list(inspect.signature(c.fn).parameters.values())
        assert len(c.specs) <= len(params), f"{c.id}: more specs than parameters"
        assert all(p.default is not p.empty for p in params[len(c.specs):]), f"{c.id}: a spec per parameter"
        assert c.xfail is None or c.xfail.strip(), c.id


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in corpus.CASES])
def test_corpus_function_is_well_formed(case):
    """The inputs are what the case says, the function returns a finite float scalar and mutates nothing."""
    args = case.inputs()
    before = copy.deepcopy(args)
    value = case.fn(*args)
    _assert_same(before, args, "the corpus function changed its input")
    assert isinstance(value, (float, np.floating, np.ndarray)) and np.size(value) == 1
    assert np.asarray(value).dtype.kind == "f" and np.isfinite(value)
    assert case.wrt(args), "no float argument to differentiate"
    if case.when is not None:
        assert case.when(*args), f"the inputs of {case.id} do not take the intended path"
    for name in case.zero:
        assert name in case.params
    np.testing.assert_allclose(_Replay(case.fn, args)(*args), value, rtol=1e-12)
    _assert_same(case.inputs(), args, "inputs are not reproducible")


# --- gradients --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _params())
def test_gradient_matches_finite_differences(case):
    """grad: every float argument against finite differences; value_and_grad: f's value, the same gradient."""
    args = case.inputs()
    wrt = case.wrt(args)
    grads = _gradient(case, args, wrt)
    assert isinstance(grads, tuple) and len(grads) == len(wrt), "one gradient per wrt argument"
    f = _Replay(case.fn, args)
    for argnum, g in zip(wrt, grads):
        _check_gradient(case, argnum, (), g, args[argnum], f, args)
        if case.params[argnum] in case.zero:
            assert not any(np.any(_get(g, p)) for p, _ in _leaves(g)), f"{case.params[argnum]}: expected zeros"
    with _failing_for_its_reason(case), _zero_gradient_warnings(case):
        value, again = s2sad.value_and_grad(case.fn, wrt)(*args)
    np.testing.assert_allclose(value, case.fn(*args), rtol=1e-12, atol=0, err_msg="value_and_grad's value")
    for argnum, g, h in zip(wrt, grads, again):
        for path, leaf in _leaves(g):
            np.testing.assert_allclose(_get(h, path), leaf, rtol=1e-12, atol=1e-15,
                                       err_msg=f"value_and_grad's gradient for {_where(case, argnum, path)}")


@pytest.mark.parametrize("case", _params(errors_only=True))
def test_gradient_call_does_not_mutate_inputs(case):
    args = case.inputs()
    before = copy.deepcopy(args)
    _gradient(case, args, case.wrt(args))
    _assert_same(before, args, "the gradient call changed its input")


@pytest.mark.parametrize("case", _params(errors_only=True))
def test_sum_gradients_as_views_give_the_same_owned_gradients(case, monkeypatch):
    """reduce_grad returns read-only views only for large arrays; forced to return them for
    every array, generated code must still never write into one, and return its own arrays."""
    args = case.inputs()
    wrt = case.wrt(args)
    expected = _gradient(case, args, wrt)
    monkeypatch.setattr(s2sad.runtime.reductions, "_VIEW_SIZE", 0)
    monkeypatch.setattr(s2sad.runtime.reductions, "_VIEW_ROW", 0)
    grads = _gradient(case, args, wrt)
    for g, e in zip(grads, expected):
        for path, leaf in _leaves(g):
            np.testing.assert_allclose(leaf, _get(e, path), rtol=1e-12, atol=0)
            assert not isinstance(leaf, np.ndarray) or leaf.flags.writeable, f"{path}: a read-only gradient"


# --- deterministic generation -----------------------------------------------------------------------


def _targets() -> dict[str, tuple[Callable[..., Any], tuple[int, ...]]]:
    """Every (function, wrt) pair of the corpus, by ``name:wrt-names``."""
    out = {}
    for c in corpus.CASES:
        wrt = c.wrt()
        out.setdefault(f"{c.name}:{','.join(c.params[i] for i in wrt)}", (c.fn, wrt))
    return out


def _text(fn: Callable[..., Any], wrt: tuple[int, ...]) -> str:
    """The generated code, or the error (an error must be deterministic too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.ZeroGradientWarning)
        try:
            text = s2sad.adjoint_source(fn, wrt)
        except Exception as exc:  # noqa: BLE001
            text = f"{type(exc).__name__}: {exc}"
    return re.sub(r"0x[0-9a-fA-F]+", "0x?", text)


def generated_texts() -> dict[str, str]:
    """The generated code (or the error) for every corpus function; run in fresh processes too."""
    return {key: _text(fn, wrt) for key, (fn, wrt) in _targets().items()}


@pytest.fixture(scope="module")
def texts_in_other_processes() -> list[dict[str, str]]:
    # the same s2sad as this process, wherever it was imported from
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(s2sad.__file__)))
    env = {k: v for k, v in os.environ.items() if k != "S2SAD_STAGES"}
    env["PYTHONPATH"] = os.pathsep.join([HERE, package_root])
    code = "import json, test_corpus; print(json.dumps(test_corpus.generated_texts()))"
    procs = []
    for hash_seed in ("0", "12345"):
        procs.append(subprocess.Popen([sys.executable, "-c", code], cwd=HERE, text=True,
                                      env=dict(env, PYTHONHASHSEED=hash_seed),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr
        out.append(json.loads(stdout))
    return out


@pytest.fixture(scope="module")
def texts_here() -> dict[str, str]:
    return generated_texts()


@pytest.mark.parametrize("key", list(_targets()))
def test_generation_is_deterministic(key, texts_here, texts_in_other_processes):
    """Asking again gives the same text, and so does generating it afresh in two other processes
    with different string-hash seeds (set and dict-of-str iteration orders differ there)."""
    assert _text(*_targets()[key]) == texts_here[key]
    for other in texts_in_other_processes:
        assert other[key] == texts_here[key], f"{key}: a fresh process generated different code"
