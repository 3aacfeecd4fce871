"""Pass 2: parse the source with libcst and compute metadata on the original tree."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..errors import Location, UnsupportedSyntaxError
from .source import FunctionSource


@dataclass
class Parsed:
    """The parsed function and the metadata computed on it."""

    source: FunctionSource
    module: cst.Module
    function: cst.FunctionDef
    positions: Mapping[cst.CSTNode, Any]

    def location(self, node: cst.CSTNode) -> Location:
        start = self.positions[node].start
        return self.source.location(start.line, start.column)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


def parse(source: FunctionSource) -> Parsed:
    try:
        module = cst.parse_module(source.text)
    except cst.ParserSyntaxError as exc:
        raise UnsupportedSyntaxError(
            f"cannot parse the source of {source.fn.__qualname__}: {exc.message}",
            source.location(exc.raw_line, exc.raw_column),
        ) from None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    functions = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    if len(functions) != 1:
        raise UnsupportedSyntaxError(
            f"expected the source of one function for {source.fn.__qualname__}",
            source.location(1, 0),
        )
    return Parsed(source, module, functions[0], positions)


_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes of ``node``, read from its fields (libcst's ``children`` property
    runs a visitor, which made tree walks dominate compile time)."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if _is_node(type(value)):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if _is_node(type(v)))
    return out


_NODE_TYPES: dict[type, bool] = {}


def _is_node(kind: type) -> bool:
    """``issubclass(kind, cst.CSTNode)``, remembered (CSTNode is an ABC: checks are slow)."""
    known = _NODE_TYPES.get(kind)
    if known is None:
        known = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return known
