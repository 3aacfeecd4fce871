"""Generated code against golden files (run with S2SAD_UPDATE_GOLDEN=1 to rewrite them)."""
from __future__ import annotations

import os
import pathlib

import pytest

import s2sad
from golden_functions import GOLDEN

GOLDEN_DIR = pathlib.Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_generated_code_matches_golden_file(name):
    fn, wrt = GOLDEN[name]
    text = s2sad.adjoint_source(fn, wrt=wrt)
    path = GOLDEN_DIR / f"{name}.py"
    if os.environ.get("S2SAD_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_generation_is_deterministic(name):
    fn, wrt = GOLDEN[name]
    first = s2sad.adjoint_source(fn, wrt=wrt)
    s2sad.clear_cache()
    assert s2sad.adjoint_source(fn, wrt=wrt) == first


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_files_are_runnable_modules(name):
    """A printed gradient is a self-contained module one can save and import."""
    namespace: dict = {}
    path = GOLDEN_DIR / f"{name}.py"
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    assert callable(namespace[f"grad_{name}"])
