"""Which Python function a callee is, and whether it is library code (the standard
library or an installed package), which s2sad never traces into."""
from __future__ import annotations

import functools
import os
import sys
import sysconfig
import types
from typing import Any

from ..callees import Decorated, Dispatch, MethodOfSelf, RecursiveCall, unwrap


#: Where the standard library and installed packages live: code there is never traced into.
_LIBRARY_DIRS = tuple(sorted({os.path.join(os.path.realpath(path), "") for path in (
    sysconfig.get_path(name, vars=base) for name in ("stdlib", "platstdlib", "purelib", "platlib")
    for base in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix})) if path}))


def python_function(key: Any) -> Any:
    """The Python function behind ``key`` (a decorated one is unwrapped; a method's function),
    a method of ``self`` (bound at run time), or None."""
    key = unwrap(key)
    if isinstance(key, Dispatch):  # generated code calling a method of self, differentiated again
        key = key.method
    if isinstance(key, types.MethodType):
        key = key.__func__
    if library_function(key):
        return None
    # (RecursiveCall: generated code making a recursive call, differentiated again)
    return key if isinstance(key, (types.FunctionType, MethodOfSelf, RecursiveCall)) else None


def callable_object(key: Any) -> bool:
    """Whether ``key`` is an instance of a class whose ``__call__`` is a Python function."""
    return not isinstance(key, (type, types.FunctionType, types.MethodType, functools.partial,
                                Decorated, Dispatch, RecursiveCall)) and isinstance(
        getattr(type(key), "__call__", None), types.FunctionType) and not library_function(type(key).__call__)


def library_function(key: Any) -> bool:
    """Whether ``key`` is a Python function of the standard library or an installed package
    (NumPy's and SciPy's included), not the user's own code."""
    if not isinstance(key, types.FunctionType):
        return False
    filename = os.path.realpath(key.__code__.co_filename)
    return filename.startswith(_LIBRARY_DIRS) or bool(
        {"site-packages", "dist-packages"} & set(filename.split(os.sep)))
