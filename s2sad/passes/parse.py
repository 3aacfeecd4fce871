"""Pass 2: parse the source with libcst and compute metadata on the original tree."""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

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
    if source.lambda_name is not None:
        return _parse_lambda(source)
    try:
        module, positions = _parsed(source.text)
    except cst.ParserSyntaxError as exc:
        raise UnsupportedSyntaxError(
            f"cannot parse the source of {source.fn.__qualname__}: {exc.message}",
            source.location(exc.raw_line, exc.raw_column),
        ) from None
    functions = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    if len(functions) != 1:
        raise UnsupportedSyntaxError(
            f"expected the source of one function for {source.fn.__qualname__}",
            source.location(1, 0),
        )
    return Parsed(source, module, functions[0], positions)


# (a function's code is generated again, specialised to its arguments' shapes, from the
# same text: libcst's trees are immutable, and the positions only read)
@functools.lru_cache(maxsize=32)
def _parsed(text: str) -> tuple[cst.Module, Mapping[cst.CSTNode, CodeRange]]:
    """The module ``text`` parses to, and where each of its nodes stands."""
    module = cst.parse_module(text)
    return module, MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def _parse_lambda(source: FunctionSource) -> Parsed:
    """A lambda as the function ``def <name>(<params>): return <body>``, whose nodes keep
    the lambda's positions (the statements made here stand where its body stands)."""
    # parenthesized, a lambda spread over several lines parses; columns on its first line
    # are then one too far right
    module, found = _parsed(f"({source.text})\n")
    positions: dict[cst.CSTNode, CodeRange] = {
        node: _unshift(where) for node, where in found.items()}
    expression = module.body[0].body[0].value
    assert isinstance(expression, cst.Lambda)
    body = expression.body
    returned = cst.Return(body)
    line = cst.SimpleStatementLine([returned])
    function = cst.FunctionDef(cst.Name(source.lambda_name), expression.params,
                               cst.IndentedBlock([line]))
    positions.update({returned: positions[body], line: positions[body],
                      function: positions[expression]})
    return Parsed(source, module, function, positions)


def _unshift(where: CodeRange) -> CodeRange:
    start, end = where.start, where.end
    if start.line == 1:
        start = CodePosition(1, start.column - 1)
    if end.line == 1:
        end = CodePosition(1, end.column - 1)
    return CodeRange(start, end)


_FIELDS: dict[type, tuple[str, ...]] = {}


# (nodes are immutable: the passes walk the same subtrees many times)
@functools.lru_cache(maxsize=1 << 16)
def children(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    """The child nodes of ``node``, read from its fields (libcst's ``children`` property
    runs a visitor, which made tree walks dominate compile time)."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        is_node = _NODE_TYPES.get(type(value))  # _is_node, inlined: this runs for every field walked
        if is_node is None:
            is_node = _is_node(type(value))
        if is_node:
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out += [v for v in value if _is_node(type(v))]
    return tuple(out)


_NODE_TYPES: dict[type, bool] = {}
#: names that are no variables: an attribute's name, a keyword argument's
_NOT_VARIABLES = {cst.Attribute: "attr", cst.Arg: "keyword"}
#: precedence too low to stand as an operand unparenthesized
_LOOSE = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.BooleanOperation, cst.IfExp,
          cst.Lambda)


def with_names_replaced(node: cst.CSTNode, exprs: dict[str, cst.BaseExpression], used: set[str]) -> cst.CSTNode:
    """``node`` reading ``exprs[n]`` wherever it reads the variable ``n`` (parenthesized, but as
    an argument or an element), adding each such ``n`` to ``used``.  Only the nodes on the way
    to a replaced name are made anew (a libcst transformer copies every node)."""
    if type(node) is cst.Name:
        expr = exprs.get(node.value)
        if expr is None:
            return node
        used.add(node.value)
        if isinstance(expr, _LOOSE) and not expr.lpar:
            return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return expr
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    skipped = _NOT_VARIABLES.get(type(node))
    changes: dict[str, object] = {}
    for name in names:
        value = getattr(node, name)
        if name == skipped:
            continue
        if type(value) is cst.Name and name == "value" and type(node) in (cst.Arg, cst.Element) \
                and value.value in exprs:
            used.add(value.value)
            changes[name] = exprs[value.value]  # (bare: an argument needs no parentheses)
        elif _is_node(type(value)):
            new = with_names_replaced(value, exprs, used)
            if new is not value:
                changes[name] = new
        elif isinstance(value, (list, tuple)):
            items = [with_names_replaced(v, exprs, used) if _is_node(type(v)) else v for v in value]
            if any(a is not b for a, b in zip(items, value)):
                changes[name] = type(value)(items)
    return node.with_changes(**changes) if changes else node


def _is_node(kind: type) -> bool:
    """``issubclass(kind, cst.CSTNode)``, remembered (CSTNode is an ABC: checks are slow)."""
    known = _NODE_TYPES.get(kind)
    if known is None:
        known = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return known
