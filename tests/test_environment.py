"""s2sad's environment variables are read at each call, as os.environ holds them then."""
from __future__ import annotations

import numpy as np

import s2sad
from s2sad.environment import variable
from s2sad.tracebacks import debugging


def f(x):
    return np.sum(np.tanh(x) ** 2)


def test_a_variable_is_read_as_os_environ_holds_it_now(monkeypatch):
    monkeypatch.delenv("S2SAD_TEST_VARIABLE", raising=False)
    assert variable("S2SAD_TEST_VARIABLE") is None
    monkeypatch.setenv("S2SAD_TEST_VARIABLE", "é 1")
    assert variable("S2SAD_TEST_VARIABLE") == "é 1"
    monkeypatch.setenv("S2SAD_TEST_VARIABLE", "")
    assert variable("S2SAD_TEST_VARIABLE") == ""
    monkeypatch.delenv("S2SAD_TEST_VARIABLE")
    assert variable("S2SAD_TEST_VARIABLE") is None


def test_debug_and_specialize_follow_the_environment_between_cached_calls(monkeypatch):
    monkeypatch.delenv("S2SAD_DEBUG", raising=False)
    monkeypatch.delenv("S2SAD_SPECIALIZE", raising=False)
    assert not debugging()
    assert hasattr(s2sad.grad(f), "__s2sad_specialized__")
    monkeypatch.setenv("S2SAD_DEBUG", "1")
    assert debugging()
    monkeypatch.setenv("S2SAD_SPECIALIZE", "0")
    assert not hasattr(s2sad.grad(f), "__s2sad_specialized__")
    monkeypatch.setenv("S2SAD_DEBUG", "0")
    assert not debugging()
    monkeypatch.delenv("S2SAD_SPECIALIZE")
    assert hasattr(s2sad.grad(f), "__s2sad_specialized__")
