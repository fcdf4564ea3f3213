"""What the names and expressions of a Python program stand for, read with :mod:`ast`: the
dotted name a callee resolves to (imports, aliases, re-exports of local modules) and the values
a string or argv expression can have, as far as they are known statically."""

from __future__ import annotations

import ast
import base64
import codecs
import posixpath
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from .tables import TABLES

__all__ = ["CALLS", "FILE_OPS", "MAX_VALUES", "SINKS", "ModuleReader"]

Item = tuple[str, Any]
ModuleReader = Callable[[str], "str | None"]
MAX_VALUES = 8
T = TypeVar("T")
_PY = TABLES["python"]
_SAME_VALUE = frozenset(_PY["same_value"])
FILE_OPS = {name: tuple(words) for name, words in _PY["file_ops"].items()}
CALLS: dict[str, str] = {**dict.fromkeys(FILE_OPS, "file_op"), **_PY["calls"]}
SINKS = frozenset(q for q, how in CALLS.items() if how in ("shell", "start", "file_op"))
"""The calls that run commands or change files (a reference to one that is not called asks)."""
_STDLIB = frozenset(sys.stdlib_module_names)
_UNKNOWN = ast.Name("__unknown__")  # a value that cannot be known


def _imported(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """The names an import binds, each to the dotted name it stands for."""
    if isinstance(node, ast.Import):
        return {a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                for a in node.names}  # fmt: skip
    if not node.module:
        return {}
    return {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}


def _exports(code: str) -> dict[str, str]:
    """The names a module binds at its top level to another module's name (its imports and
    ``name = other.name``), each to the dotted name it stands for."""
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError):
        return {}
    table: dict[str, str] = {}
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            table.update(_imported(node))
        elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)):
            head, _, rest = ast.unparse(node.value).partition(".")
            dotted = table.get(head, head) + ("." + rest if rest else "")
            table.update({t.id: dotted for t in node.targets if isinstance(t, ast.Name)})
    return table


class _Values:
    """A Python program's names and the values of its expressions (the base of its front end)."""

    def __init__(
        self, code: str, argv: list[str], depth: int = 0, read_module: ModuleReader | None = None
    ) -> None:
        self.code, self.argv, self.depth = code, argv, depth
        self.read_module = read_module
        self.tables: dict[str, dict[str, str]] = {}
        self.aliases: dict[str, str] = {}
        self.assigns: dict[str, list[ast.expr]] = {}
        self.funcs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.mutated: set[str] = set()
        self.calls_of: dict[str, list[ast.Call]] = {}
        self.out: list[Item] = []
        self.stars: list[str] = []
        self.copies: list[tuple[str, str]] = []
        self.called: set[int] = set()

    # the program's names: imports, assignments, functions, mutated lists
    def scan(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.aliases.update(_imported(node))
                if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                    self.stars.append(node.module or "")
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self.target(node.optional_vars, node.context_expr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.funcs[node.name] = node
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    self.target(t, node.value)
            elif isinstance(node, (ast.For, ast.comprehension)):
                self.target(node.target, node.iter, each=True)
            elif isinstance(node, ast.Call):
                self.scan_call(node)
                self.called.add(id(node.func))
        for _ in range(3):
            for copy, original in self.copies:
                if copy in self.mutated or original in self.mutated:
                    self.mutated |= {copy, original}

    def target(self, t: ast.expr, value: ast.expr, each: bool = False) -> None:
        if isinstance(t, ast.Name):
            if each and isinstance(value, (ast.List, ast.Tuple)):
                self.assigns.setdefault(t.id, []).extend(value.elts)
            elif each:  # one item of what the loop runs over: known only for a call's result
                item = value if isinstance(value, ast.Call) else _UNKNOWN
                self.assigns.setdefault(t.id, []).append(item)
            else:
                self.assigns.setdefault(t.id, []).append(value)
                if isinstance(value, ast.Name):
                    self.copies.append((t.id, value.id))
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            self.mutated.add(t.value.id)
        elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
            if self.qualname(t.value) in ("builtins", "os", "subprocess", "shutil", "sys"):
                self.out.append(("note", "script-dynamic-code"))
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self.target(e, _UNKNOWN)

    def scan_call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            if f.attr in ("append", "extend", "insert", "pop", "remove", "clear", "__setitem__"):
                self.mutated.add(f.value.id)
        if isinstance(f, ast.Name):
            self.calls_of.setdefault(f.id, []).append(node)
            if f.id in self.funcs:  # a function the program defines may change what it is passed
                self.mutated |= {a.id for a in node.args if isinstance(a, ast.Name)}

    def qualname(self, node: ast.expr, depth: int = 0) -> str:
        """The dotted name a callee resolves to (``s.rmtree`` -> ``shutil.rmtree``)."""
        if depth > 8:
            return ""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.exported(self.aliases[node.id])
            for module in self.stars:
                if f"{module}.{node.id}" in SINKS:
                    return f"{module}.{node.id}"
            values = self.assigns.get(node.id, [])
            if len(values) == 1 and isinstance(values[0], (ast.Name, ast.Attribute, ast.Call)):
                return self.qualname(values[0], depth + 1)
            return node.id
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value, depth + 1)
            return self.exported(f"{base}.{node.attr}") if base else ""
        if isinstance(node, ast.Call):
            callee = self.qualname(node.func, depth + 1)
            if callee in ("__import__", "importlib.import_module") and node.args:
                names = self.values(node.args[0])
                return names[0] if names and len(names) == 1 else ""
            if callee == "getattr" and len(node.args) >= 2:
                attr = self.values(node.args[1])
                base = self.qualname(node.args[0], depth + 1)
                return f"{base}.{attr[0]}" if attr and len(attr) == 1 else ""
            return f"{callee}()" if callee in ("ctypes.CDLL", "ctypes.cdll.LoadLibrary") else ""
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            for v in self.assigns.get(node.value.id, []):
                if isinstance(v, ast.Dict):
                    found = [self.qualname(x, depth + 1) for x in v.values if x is not None]
                    return found[0] if len(set(found)) == 1 else ""
        return ""

    def exported(self, name: str) -> str:
        """``name`` (``helper.run``) with what a local module re-exports under it followed
        (``os.system`` when ``helper.py`` says ``from os import system as run``)."""
        for _ in range(4):
            module, _, attr = name.rpartition(".")
            if not module or self.read_module is None or module.partition(".")[0] in _STDLIB:
                return name
            if module not in self.tables:
                path = module.replace(".", "/")
                folder = posixpath.dirname(self.argv[0]) if self.argv else ""
                text = folder and self.read_module(posixpath.join(folder, path))
                text = text or self.read_module(path)
                self.tables[module] = _exports(text) if text else {}
            if attr not in self.tables[module]:
                return name
            name = self.tables[module][attr]
        return name

    # values a string expression can have: a list of strings, or None when unknown
    def values(self, node: ast.expr | None, depth: int = 0) -> list[str] | None:
        if node is None or depth > 12:
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.values(node.operand, depth + 1)
            return ["-" + v for v in inner] if inner else None
        if isinstance(node, ast.Attribute) and self.qualname(node) == "sys.executable":
            return ["python3"]
        if isinstance(node, ast.Attribute) and self.qualname(node).startswith("signal.SIG"):
            return [node.attr]
        if isinstance(node, ast.Name) and node.id == "__file__":
            return [self.argv[0] if self.argv else "prog.py"]
        if isinstance(node, ast.Constant):
            v = node.value
            return [v.decode("latin-1") if isinstance(v, bytes) else str(v)]
        if isinstance(node, ast.JoinedStr):
            parts = (v.value if isinstance(v, ast.FormattedValue) else v for v in node.values)
            return self.concat(depth, *parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
            return self.concat(depth, node.left, "/" if isinstance(node.op, ast.Div) else "",
                               node.right)  # fmt: skip
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return self.percent(node, depth)
        if isinstance(node, ast.Name):
            return self.name_values(node.id, depth)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, depth)
        if isinstance(node, ast.Call):
            return self.call_values(node, depth)
        return None

    def concat(self, depth: int, *parts: ast.expr | str | None) -> list[str] | None:
        """Every concatenation of the values of ``parts`` (a string stands for itself)."""
        out = [""]
        for part in parts:
            got = [part] if isinstance(part, str) else self.values(part, depth + 1)
            if got is None:
                return None
            out = [a + b for a in out for b in got][:MAX_VALUES]
        return out

    def percent(self, node: ast.BinOp, depth: int) -> list[str] | None:
        fmt = self.values(node.left, depth + 1)
        args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        vals = [self.values(a, depth + 1) for a in args]
        if fmt is None or any(v is None for v in vals):
            return None
        try:
            return [
                f % tuple(int(v[0]) if v[0].isdigit() else v[0] for v in vals if v) for f in fmt
            ]
        except (TypeError, ValueError):
            return None

    def name_values(self, name: str, depth: int) -> list[str] | None:
        """The values a name can have: what it is assigned, or what a parameter is passed."""
        items = self.assigns[name] if name in self.assigns else self.passed(name)
        return _union(items, lambda v: self.values(v, depth + 1))

    def passed(self, name: str) -> list[ast.expr] | None:
        """What the program's calls pass to the parameter ``name`` (a ``*name`` one gets a
        list); ``None`` when it is no parameter or a call passes nothing for it."""
        for fn in self.funcs.values():
            params = [a.arg for a in fn.args.args]
            calls = self.calls_of.get(fn.name, [])
            if name in params:
                index = params.index(name)
                if any(index >= len(call.args) for call in calls):
                    return None
                return [call.args[index] for call in calls]
            if fn.args.vararg is not None and fn.args.vararg.arg == name:
                return [ast.List(elts=list(call.args)) for call in calls] or [ast.List(elts=[])]
        return None

    def subscript(self, node: ast.Subscript, depth: int) -> list[str] | None:
        q = self.qualname(node.value)
        key = self.values(node.slice, depth + 1) if not isinstance(node.slice, ast.Slice) else None
        if q in ("os.environ",) and key == ["HOME"]:
            return ["~"]
        if q == "sys.argv" and key and key[0].isdigit() and int(key[0]) < len(self.argv):
            return [self.argv[int(key[0])]]
        if isinstance(node.slice, ast.Slice) and node.slice.step is not None:
            base = self.values(node.value, depth + 1)
            step = self.values(node.slice.step, depth + 1)
            return [b[:: int(step[0])] for b in base] if base and step == ["-1"] else None
        return None

    def call_values(self, node: ast.Call, depth: int) -> list[str] | None:
        f = node.func
        q = self.qualname(f)
        arg = node.args[0] if node.args else None
        if q in _SAME_VALUE:
            return self.values(arg, depth + 1) if arg is not None else ["."]
        if q in ("pathlib.Path.home", "Path.home", "os.path.expanduser()") or (
            q in ("os.getenv", "os.environ.get") and self.values(arg, depth + 1) == ["HOME"]
        ):
            return ["~"]
        if q == "os.path.join":
            parts = [self.values(a, depth + 1) for a in node.args]
            if any(p is None for p in parts):
                return None
            return [posixpath.join(*combo) for combo in _product(parts)]
        if q == "os.path.dirname" and arg is not None:
            v = self.values(arg, depth + 1)
            return [posixpath.dirname(x) or "." for x in v] if v else None
        if q in ("glob.glob", "glob.iglob") and arg is not None:
            return self.values(arg, depth + 1)
        if q == "chr" and arg is not None:
            v = self.values(arg, depth + 1)
            return [chr(int(x)) for x in v] if v and all(x.isdigit() for x in v) else None
        if isinstance(f, ast.Attribute):
            return self.method_values(f, node, depth)
        return None

    def method_values(self, f: ast.Attribute, node: ast.Call, depth: int) -> list[str] | None:
        q = self.qualname(f.value)
        if f.attr in ("b64decode", "fromhex") or q == "codecs" and f.attr == "decode":
            return self.decode_call(f.attr, node, depth)
        if f.attr in ("glob", "rglob", "iglob") and node.args:
            return self.concat(depth, f.value, "/", node.args[0])
        if (
            f.attr in ("expanduser", "resolve", "absolute", "strip", "decode", "encode", "lower")
            or q == "tempfile"
        ):
            if q == "tempfile":
                return ["/tmp/\x00"]
            return self.values(f.value, depth + 1)
        if f.attr == "join" and node.args:
            sep = self.values(f.value, depth + 1)
            return self.joined(sep, node.args[0], depth)
        if f.attr == "format":
            fmt = self.values(f.value, depth + 1)
            vals = [self.values(a, depth + 1) for a in node.args]
            if fmt is None or any(v is None for v in vals):
                return None
            return [x.format(*(v[0] for v in vals if v)) for x in fmt]
        if f.attr in ("joinpath",):
            return self.concat(depth, f.value, "/", node.args[0] if node.args else None)
        return None

    def decode_call(self, attr: str, node: ast.Call, depth: int) -> list[str] | None:
        v = self.values(node.args[0], depth + 1) if node.args else None
        if v is None:
            return None
        try:
            if attr == "b64decode":
                return [base64.b64decode(x).decode("latin-1") for x in v]
            if attr == "fromhex":
                return [bytes.fromhex(x).decode("latin-1") for x in v]
            return [codecs.decode(x, "rot13") for x in v]
        except ValueError:
            return None

    def joined(self, sep: list[str] | None, items: ast.expr, depth: int) -> list[str] | None:
        if sep is None:
            return None
        if isinstance(items, ast.GeneratorExp | ast.ListComp) and isinstance(items.elt, ast.Call):
            gen = items.generators[0]
            if (
                isinstance(gen.iter, (ast.List, ast.Tuple))
                and self.qualname(items.elt.func) == "chr"
            ):
                codes = [self.values(e, depth + 1) for e in gen.iter.elts]
                if all(c and c[0].isdigit() for c in codes):
                    return [sep[0].join(chr(int(c[0])) for c in codes if c)]
            return None
        words = self.argv_values(items, depth)
        return [sep[0].join(w) for w in words] if words is not None else None

    def listed(self, nodes: list[ast.expr]) -> list[list[str]] | None:
        """The argv lists the expressions ``nodes``, one word each, can be."""
        return self.argv_values(ast.List(elts=list(nodes)))

    def argv_values(self, node: ast.expr, depth: int = 0) -> list[list[str]] | None:
        """The argv lists an expression can be (``None`` when unknown)."""
        if isinstance(node, ast.Name):
            if node.id in self.mutated:
                return None
            if node.id not in self.assigns:
                return _union(self.passed(node.id), self.argv_values)
            return _union(self.assigns[node.id], lambda v: self.argv_values(v, depth + 1))
        if (
            isinstance(node, ast.Call)
            and self.qualname(node.func) in ("list", "tuple")
            and node.args
        ):
            return self.argv_values(node.args[0], depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            words: list[list[str]] = [[]]
            for e in node.elts:
                v = self.values(e, depth + 1)
                if v is None:
                    return None
                words = [w + [x] for w in words for x in v][:MAX_VALUES]
            return words
        return None


def _union(
    items: list[ast.expr] | None, each: Callable[[ast.expr], list[T] | None]
) -> list[T] | None:
    """Every value ``each`` gives one of ``items``; ``None`` when one is unknown or none is."""
    out: list[T] = []
    for item in items or ():
        got = each(item)
        if got is None:
            return None
        out += got
    return out[:MAX_VALUES] or None


def _product(parts: list[list[str] | None]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for p in parts:
        out = [a + [b] for a in out for b in p or []][:MAX_VALUES]
    return out
