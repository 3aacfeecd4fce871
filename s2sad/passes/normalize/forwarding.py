"""A Python function whose only parameters are ``*args`` and/or ``**kwargs``, which it passes
on whole to another call (``def fwd(*args, **kwargs): return g(*args, **kwargs)``): compiled,
for each call, with that call's parameters, so that what it passes on has a length and keys
known where it is compiled."""
from __future__ import annotations

import types
from typing import Any

import libcst as cst

from ..callees import with_forwarded_parameters
from ..source import forwarded_call


def forwarded(key: Any, node: cst.Call, receivers: int) -> Any:
    """``key``, the function ``node`` calls (after ``receivers`` arguments that go before the
    call's own), or its copy compiled with the call's parameters when it forwards them."""
    if type(key) is not types.FunctionType or receivers or any(a.star for a in node.args):
        return key
    keywords = tuple(a.keyword.value for a in node.args if a.keyword is not None)
    signature = forwarded_call(key, sum(a.keyword is None for a in node.args), keywords)
    return key if signature is None else with_forwarded_parameters(key, signature)
