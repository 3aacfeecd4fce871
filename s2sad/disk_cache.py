"""A persistent cache of generated code on disk, so that another process gets ``grad(f)``
without running the compiler.

An entry is keyed by what generation read before resolving any name: s2sad's own code,
NumPy's and Python's versions, the text of the function's file, the function's code and
what was asked (wrt, kind).  What generation resolved through names (the free names and
attribute chains of :mod:`s2sad.cache`, the objects generated code calls) is stored as
descriptions: a module by name, a function or class by module and qualified name (a Python
function also by a hash of its code and defaults), data by its type.  Loading resolves
each description in the current process and is a miss unless it finds the very object
described; the checks are then rebuilt from the current objects, exactly as generation
would have made them.  Anything that cannot be described (a callee's generated code, an
instance, a closure) means the function is not stored: a miss is always safe.

``S2SAD_CACHE_DIR`` sets the directory, ``S2SAD_CACHE=0`` turns the cache off.  A file that
cannot be read, parsed or verified is a miss, and is rewritten after generation.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import linecache
import marshal
import os
import sys
import tempfile
import types
from collections.abc import Iterator, Mapping
from typing import Any, Optional

import numpy as np

from .cache import EQUAL, SAME, TYPE, Check
from .errors import Location
from .generated import Generated, register
from .passes.source import GENERATED_LINES
from .rules.registry import REGISTRY
from .sentinel import MISSING

FORMAT = 1
#: Objects of these packages are trusted by name: their code is fingerprinted (s2sad) or
#: versioned (NumPy) in the key, or built in.
_TRUSTED = frozenset({"builtins", "numpy", "s2sad"})
_CONSTANTS = {"None": None, "True": True, "False": False, "Ellipsis": ...}
_LITERALS = (type(None), bool, int, float, complex, str, bytes)

Relative = tuple[tuple[str, Any, Any, int], ...]
Entry = tuple[Generated, Relative, tuple[Check, ...]]


def directory() -> str | None:
    """Where entries are stored; None when the cache is off (``S2SAD_CACHE=0``)."""
    if os.environ.get("S2SAD_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    given = os.environ.get("S2SAD_CACHE_DIR")
    if given:
        return given
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
        return os.path.join(base, "s2sad", "Cache")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/s2sad")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "s2sad")


_fingerprint: list[str] = []


def _own_fingerprint() -> str:
    """A hash of every .py file of the s2sad package (once per process): an edit to s2sad
    invalidates what it generated."""
    if not _fingerprint:
        digest = hashlib.sha256()
        root = os.path.dirname(os.path.abspath(__file__))
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path, "rb") as f:
                        data = f.read()
                    digest.update(f"{path[len(root):]}:{len(data)}:".encode())
                    digest.update(data)
        _fingerprint.append(digest.hexdigest())
    return _fingerprint[0]


def code_hash(code: types.CodeType) -> str:
    """A hash of what a code object does (not of where it is: line numbers are left out),
    the same in every process."""
    digest = hashlib.sha256()

    def feed(value: Any) -> None:
        if isinstance(value, types.CodeType):
            digest.update(b"code(")
            for part in (value.co_code, value.co_names, value.co_varnames, value.co_freevars,
                         value.co_cellvars, value.co_argcount, value.co_posonlyargcount,
                         value.co_kwonlyargcount, value.co_flags, value.co_name, value.co_consts):
                feed(part)
            digest.update(b")")
        elif isinstance(value, (bytes, str)):
            data = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
            digest.update(f"{type(value).__name__}{len(data)}:".encode())
            digest.update(data)
        elif isinstance(value, tuple):
            digest.update(b"(")
            for item in value:
                feed(item)
            digest.update(b")")
        elif isinstance(value, frozenset):
            digest.update(b"{" + b",".join(sorted(repr(v).encode() for v in value)) + b"}")
        else:
            digest.update(f"{type(value).__name__}:{value!r};".encode())

    feed(code)
    return digest.hexdigest()


def key(fn: types.FunctionType, what: tuple[Any, ...]) -> str | None:
    """The entry's key for generating ``what`` (the compiler's key: names, multiple, kind,
    split, debug) of ``fn``, or None if ``fn``'s generated code is not stored on disk."""
    if (directory() is None or REGISTRY.user_declared or os.environ.get("S2SAD_STAGES")
            or fn.__name__ == "<lambda>" or "__wrapped__" in vars(fn)):
        return None
    filename = fn.__code__.co_filename
    if filename.startswith("<"):
        return None
    try:
        linecache.checkcache(filename)  # the text generation would read (as inspect does)
        text = "".join(linecache.getlines(filename, fn.__globals__))
        if not text:
            return None
        # (the module's name too: the generated text imports from it)
        parts = [FORMAT, _own_fingerprint(), np.__version__, sys.version, filename,
                 hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), fn.__globals__.get("__name__"),
                 fn.__qualname__, fn.__code__.co_firstlineno, code_hash(fn.__code__), repr(what)]
    except Exception:  # noqa: BLE001 - an unreadable file: no cache
        return None
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


# ---- describing the objects generation resolved, and finding them again ------------------

def _path(obj: Any) -> tuple[str, str] | None:
    """``(module, qualified name)`` that finds ``obj`` itself, if any."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if isinstance(obj, np.ufunc):  # (a ufunc has no __module__)
        module = module or next((m for m in ("numpy", "scipy.special")
                                 if getattr(sys.modules.get(m), obj.__name__, None) is obj), None)
    if not isinstance(module, str) or not isinstance(name, str) or "<" in name:
        return None
    return (module, name) if _find(module, name) is obj else None


def _find(module: str, name: str) -> Any:
    found: Any = sys.modules.get(module)
    if found is None:
        try:
            found = importlib.import_module(module)
        except Exception:  # noqa: BLE001 - gone: a miss
            return MISSING
    for attr in name.split("."):
        found = getattr(found, attr, MISSING)
    return found


def _top(module: Any) -> str:
    return module.split(".")[0] if isinstance(module, str) else ""


def describe(obj: Any) -> Optional[list[Any]]:
    """A description of an object generation resolved, that finds it in another process;
    None if there is none that is safe."""
    if obj is MISSING:
        return ["missing"]
    for spelled, constant in _CONSTANTS.items():
        if obj is constant:
            return ["const", spelled]
    if isinstance(obj, types.ModuleType):
        return ["module", obj.__name__] if sys.modules.get(obj.__name__) is obj else None
    path = _path(obj)
    if path is None:
        return None
    trusted = _top(path[0]) in _TRUSTED
    if isinstance(obj, types.FunctionType):
        defaults, literal = _defaults(obj)
        if not trusted and (obj.__closure__ or "__wrapped__" in vars(obj) or not literal):
            return None  # what it does is not all in its code
        return ["object", *path, code_hash(obj.__code__), defaults]
    if isinstance(obj, type):
        return ["object", *path] if trusted else None  # a user's class: its methods could change
    if isinstance(obj, (np.ufunc, types.BuiltinFunctionType)) or _top(type(obj).__module__) in _TRUSTED:
        return ["object", *path]
    return None


def _defaults(fn: types.FunctionType) -> tuple[str, bool]:
    """``fn``'s defaults as text, and whether they are all literals (a library's sentinel is
    described by its type: its repr may show its address)."""
    keywords = fn.__kwdefaults__ or {}
    values = [*(fn.__defaults__ or ()), *(keywords[k] for k in sorted(keywords))]
    spelled = [repr(v) if type(v) in _LITERALS else type(v).__qualname__ for v in values]
    return repr([sorted(keywords), spelled]), all(type(v) in _LITERALS for v in values)


def resolve(description: list[Any]) -> Any:
    """The object ``description`` finds now; LookupError (or ImportError) if it finds none,
    or another object than the one described."""
    tag = description[0]
    if tag == "missing":
        return MISSING
    if tag == "const":
        return _CONSTANTS[description[1]]
    if tag == "str":
        return description[1]
    if tag == "module":
        return sys.modules.get(description[1]) or importlib.import_module(description[1])
    if tag == "dict":
        return vars(resolve(["module", description[1]]))
    if tag == "object":
        found = _find(description[1], description[2])
        if found is MISSING or describe(found) != description:  # (a function: its code, its defaults)
            raise LookupError(description)
        return found
    raise LookupError(description)


def _describe_expected(expected: Any, how: int) -> Optional[list[Any]]:
    if how == TYPE:
        return describe(expected) if isinstance(expected, type) else None
    if how == EQUAL:
        return ["str", expected] if type(expected) is str else None
    return describe(expected)


def _describe_where(where: Any) -> Optional[list[Any]]:
    if type(where) is dict:
        name = where.get("__name__")
        module = sys.modules.get(name) if isinstance(name, str) else None
        return ["dict", name] if module is not None and vars(module) is where else None
    if isinstance(where, (types.ModuleType, type)):
        return describe(where)
    return None  # an instance (a config, a model): its attributes are its own


# ---- entries ---------------------------------------------------------------------------

def _file(digest: str) -> str | None:
    folder = directory()
    return None if folder is None else os.path.join(folder, f"{digest}.s2sad")


def store(digest: str, entry: Entry) -> None:
    """Write ``entry`` under ``digest`` if everything it depends on can be described;
    silently nothing otherwise, or if the directory cannot be written."""
    generated, relative, absolute = entry
    try:
        header = _header(digest, generated, relative, absolute)
        path = _file(digest)
        if header is None or path is None:
            return
        sections = [generated.text.encode("utf-8", "surrogatepass"), marshal.dumps(generated.code),
                    _origins(generated.filename)]
        header["sizes"] = [len(x) for x in sections]
        payload = b"\n".join([json.dumps(header, separators=(",", ":")).encode(), b"".join(sections)])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".s2sad")
        try:
            with os.fdopen(handle, "wb") as f:
                f.write(hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
            os.replace(temporary, path)  # atomic: a reader sees the old file or the new one
        except BaseException:
            os.unlink(temporary)
            raise
    except Exception:  # noqa: BLE001 - the cache never fails a gradient
        return


def _header(digest: str, generated: Generated, relative: Relative,
            absolute: tuple[Check, ...]) -> dict[str, Any] | None:
    """Everything but the text and the code: descriptions of what the code depends on."""
    runtime = {}
    for name, obj in generated.runtime.items():
        described = describe(obj)
        if described is None or described[0] in ("missing", "const"):
            return None  # a callee's generated code, a dispatcher: not stored
        runtime[name] = described
    rel = []
    for kind, where_key, expected, how in relative:
        described = _describe_expected(expected, how)
        if described is None:
            return None
        rel.append([kind, where_key, described, how])
    ab = []
    for where, attr, expected, how in absolute:
        place, described = _describe_where(where), _describe_expected(expected, how)
        if place is None or described is None or not isinstance(attr, str):
            return None
        ab.append([place, attr, described, how])
    return {"key": digest, "name": generated.name, "filename": generated.filename, "replayed_unsplit": generated.replayed_unsplit,
            "runtime": runtime, "relative": rel, "absolute": ab}


def _origins(filename: str) -> bytes:
    """The user's lines the generated lines come from, as JSON: the distinct places, and
    (generated line, index of its place) pairs."""
    places: dict[Location, int] = {}
    origins = []
    for line, where in GENERATED_LINES.get(filename, {}).items():
        origins += [line, places.setdefault(where, len(places))]
    return json.dumps([[[p.filename, p.line, p.column, p.source_line] for p in places], origins]).encode()


class _Origins(Mapping[int, Location]):
    """The origins of a loaded entry's lines, decoded when an error first needs them."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.decoded: dict[int, Location] | None = None

    def _lines(self) -> dict[int, Location]:
        if self.decoded is None:
            places, origins = json.loads(self.data)
            where = [Location(*p) for p in places]
            self.decoded = {origins[i]: where[origins[i + 1]] for i in range(0, len(origins), 2)}
        return self.decoded

    def __getitem__(self, line: int) -> Location:
        return self._lines()[line]

    def __iter__(self) -> Iterator[int]:
        return iter(self._lines())

    def __len__(self) -> int:
        return len(self._lines())


def load(digest: str, fn: types.FunctionType) -> Entry | None:
    """The entry stored under ``digest``, its checks made of the current objects; None for a
    miss (no entry, an unreadable or stale one)."""
    try:
        path = _file(digest)
        if path is None:
            return None
        with open(path, "rb") as f:
            data = f.read()
        check, _, payload = data.partition(b"\n")
        if hashlib.sha256(payload).hexdigest().encode() != check:
            return None
        line, _, rest = payload.partition(b"\n")
        header = json.loads(line)
        if header["key"] != digest or len(rest) != sum(header["sizes"]):
            return None
        runtime = {name: resolve(d) for name, d in header["runtime"].items()}
        relative = tuple((kind, where_key, resolve(d), how) for kind, where_key, d, how in header["relative"])
        if any(kind not in ("global", "closure") for kind, *_ in relative):
            return None
        absolute = tuple((resolve(place), attr, resolve(d), how) for place, attr, d, how in header["absolute"])
        if any(how not in (SAME, TYPE, EQUAL) for *_, how in (*relative, *absolute)):
            return None
        text_size, code_size, _ = header["sizes"]
        text = rest[:text_size].decode("utf-8", "surrogatepass")
        code = marshal.loads(rest[text_size:text_size + code_size])
        own = set(fn.__code__.co_freevars)
        if not isinstance(code, types.CodeType) or not all(n in runtime or n in own for n in code.co_freevars):
            return None
        generated = Generated(header["name"], text, header["filename"], code, runtime, bool(header["replayed_unsplit"]))
        register(generated.filename, text, _Origins(rest[text_size + code_size:]))
        return generated, relative, absolute
    except Exception:  # noqa: BLE001 - whatever is wrong with the file, it is a miss
        return None
