"""List and dict changes written as statements, lowered as new versions of the container (as
``append`` and ``insert`` are, in containers.py): ``ys.sort(key=k, reverse=r)`` as ``ys =
sorted(ys, key=k, reverse=r)``, ``ys.reverse()`` as ``ys = ys[::-1]``, ``ys.remove(v)`` as
the deletion of the first item that is ``v`` or equal to it, and ``del c[k]`` (an index, a
slice or a key) as ``c = without_item(c, k)``."""
from __future__ import annotations

import builtins

import libcst as cst

from ... import runtime
from .syntax import strip_parens

#: The methods of a list that change it, lowered here: what each is written as.
CHANGING_LIST_METHODS = {"sort": "{0} = sorted({0})", "reverse": "{0} = {0}[::-1]",
                         "remove": "del {0}[{0}.index(v)]"}


class ListStatementLowering:
    """``ys.sort()``, ``ys.reverse()``, ``ys.remove(v)`` and ``del c[k]`` on local names."""

    def list_statement(self, call: cst.Call) -> None:
        """``ys.sort(...)``, ``ys.reverse()`` or ``ys.remove(v)`` as a new version of ``ys``."""
        name, method = call.func.value.value, call.func.attr.value
        form = CHANGING_LIST_METHODS[method].format(name)
        positional = [a for a in call.args if a.keyword is None]
        keywords = {a.keyword.value for a in call.args if a.keyword is not None}
        allowed = (0, {"key", "reverse"}) if method == "sort" else (1 if method == "remove" else 0, set())
        if any(a.star for a in call.args) or len(positional) != allowed[0] or keywords - allowed[1]:
            raise self.unsupported(call, f"'{name}.{method}' takes "
                                         f"{'key= and reverse= by keyword' if method == 'sort' else f'{allowed[0]} argument(s)'}"
                                         f" here; write {form}")
        self.check_in_place(name, call, f"'{name}.{method}(...)'", form, list_method=True)
        self.require_list(name, call, f"'{name}.{method}(...)' is followed on a list, as {form}",
                          f"; write {name} = np.sort({name}) for an array" if method == "sort" else "")
        if method == "sort":
            sort = cst.Name("sorted")
            self.res.objects[sort] = builtins.sorted
            value: cst.BaseExpression = cst.Call(sort, [cst.Arg(cst.Name(name)), *call.args])
        elif method == "reverse":
            value = cst.parse_expression(f"{name}[::-1]")
        else:
            where = self.temporary(f"{name}_position")
            found = self.helper_call(runtime.position_of, [cst.Arg(cst.Name(name)),
                                                           cst.Arg(cst.parse_expression(self.held(positional[0].value)))])
            self.lower(found, where, where)
            value = self.helper_call(runtime.without_item, [cst.Arg(cst.Name(name)), cst.Arg(cst.Name(where))])
        self.new_list_version(name, value)

    def delete_item(self, node: cst.Del, target: cst.Subscript) -> None:
        """``del c[k]`` of a local list or dict ``c`` (an index, a slice or a key) as a new
        version ``c = without_item(c, k)``."""
        name = target.value.value
        code = self.parsed.code(target).strip()
        if len(target.slice) != 1:
            raise self.unsupported(node, f"'del {code}' deletes by one index, slice or key here")
        self.check_in_place(name, node, f"'del {code}'", f"{name} = {name}[:i] + {name}[i + 1:]", list_method=True)
        index = target.slice[0].slice
        if isinstance(index, cst.Index):
            key = cst.parse_expression(self.held(index.value))
        else:  # (a slice, as code that reads held values)
            parts = [cst.parse_expression(self.held(p)) if p is not None else cst.Name("None")
                     for p in (index.lower, index.upper, index.step)]
            key = cst.Call(cst.Name("slice"), [cst.Arg(p) for p in parts])
            self.res.objects[key.func] = builtins.slice
        value = self.helper_call(runtime.without_item, [cst.Arg(cst.Name(name)), cst.Arg(key)])
        self.new_list_version(name, value, self.version.get(name, name) in self.lists)

    def require_list(self, name: str, node: cst.CSTNode, message: str, advice: str) -> None:
        """Unless ``name`` is known to be a list here, a check that it is, as the code runs."""
        current = self.version.get(name, name)
        if current in self.lists:
            return
        loc = self.location(node)
        self.run_time_check(runtime.check_list, [cst.Name(current), cst.SimpleString(repr(message + advice)),
                                                 cst.SimpleString(repr(str(loc)))], (current,), loc)

    def new_list_version(self, name: str, value: cst.BaseExpression, is_list: bool = True) -> None:
        """``name = value``, a new version of the container ``name``."""
        new = self.new_version(name)
        self.lower(strip_parens(value), new, name)
        self.version[name] = new
        if is_list:
            self.lists.add(new)
