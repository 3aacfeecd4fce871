"""s2sad's environment variables, read where every ``grad(f)`` call reads them.

``os.environ.get`` encodes the name and decodes the value on each read (about half of a
cached ``grad(f)``); this reads the dict ``os.environ`` keeps, with the name encoded once.
Every change made through ``os.environ`` (``monkeypatch.setenv`` too) is seen at once.
"""
from __future__ import annotations

import os
from typing import Any

_RAW: dict[Any, Any] | None = getattr(os.environ, "_data", None)  # (CPython's; None elsewhere)
_KEYS: dict[str, Any] = {}


def variable(name: str) -> str | None:
    """The value of environment variable ``name``, None where it is not set."""
    if _RAW is None:
        return os.environ.get(name)
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = os.environ.encodekey(name)  # type: ignore[attr-defined]
    raw = _RAW.get(key)
    return None if raw is None else os.environ.decodevalue(raw)  # type: ignore[attr-defined]
