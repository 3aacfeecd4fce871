"""Which Python function a callee is, and whether it is library code (the standard
library or an installed package), which s2sad never traces into."""
from __future__ import annotations

import functools
import inspect
import types
from typing import Any

from ..callees import Decorated, Dispatch, MethodOfSelf, RecursiveCall, unwrap
from ..source import library_function, own_function


def python_function(key: Any) -> Any:
    """The Python function behind ``key`` (a decorated one is unwrapped; a method's function),
    a method of ``self`` (bound at run time), or None."""
    key = unwrap(key)
    if isinstance(key, Dispatch):  # generated code calling a method of self, differentiated again
        key = key.method
    if isinstance(key, types.MethodType):
        key = key.__func__
    if library_function(key) and not own_function(key):  # (s2sad's own: an internal error, later)
        return None
    # (RecursiveCall: generated code making a recursive call, differentiated again)
    return key if isinstance(key, (types.FunctionType, MethodOfSelf, RecursiveCall)) else None


def returns_sequence(key: Any) -> bool:
    """Whether calling ``key`` may return a list or tuple that compiling cannot tell from an
    array: ``list``, ``tuple`` or a Python function."""
    return key is list or key is tuple or python_function(key) is not None


def callable_object(key: Any) -> bool:
    """Whether ``key`` is an instance of a class whose ``__call__`` is a Python function."""
    return not isinstance(key, (type, types.FunctionType, types.MethodType, functools.partial,
                                Decorated, Dispatch, RecursiveCall)) and isinstance(
        getattr(type(key), "__call__", None), types.FunctionType) and not library_function(type(key).__call__)


def python_method(cls: type, name: str) -> bool:
    """Whether ``cls`` has a method ``name`` written in Python outside libraries (a user's
    class's own ``__mul__``)."""
    method = inspect.getattr_static(cls, name, None)
    return isinstance(method, types.FunctionType) and not library_function(method)
