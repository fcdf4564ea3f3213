"""What the names and expressions of a Python program stand for, read with :mod:`ast`: the
dotted name a callee resolves to (imports, aliases, re-exports of local modules) and the values
a string or argv expression can have, as far as they are known statically."""

from __future__ import annotations

import ast
import base64
import codecs
import operator
import posixpath
import re
import sys
from collections.abc import Callable
from typing import Any

from .tables import TABLES

__all__ = ["CALLS", "CODE", "COMMAND", "COMMANDS", "SINKS", "Item", "ModuleReader"]

Item = tuple[str, Any]
ModuleReader = Callable[[str], "str | None"]
MAX_VALUES = 8
CODE, COMMAND = "script-dynamic-code", "script-dynamic-command"  # the notes of what is unknown
_PY = TABLES["python"]
COMMANDS = {name: tuple(words) for name, words in _PY["commands"].items()}
CALLS: dict[str, str] = {**dict.fromkeys(COMMANDS, "command"), **_PY["calls"]}
SINKS = frozenset(q for q, how in CALLS.items() if how in ("shell", "start", "command"))
"""The calls that run commands or change files (a reference to one that is not called asks)."""
_STDLIB = frozenset(sys.stdlib_module_names)
_UNKNOWN = ast.Name("__unknown__")  # a value that cannot be known
_HUGE = re.compile(r"%[-+ #0]*\d{4}|\{[^{}]*:[^{}]*\d{4}")  # a format field this wide: not folded
_ENVIRON = {"HOME": "~"}  # the only variable whose value the policy assumes
_ATTRIBUTES: dict[str, Any] = {"sys.executable": "python3", "os.environ": _ENVIRON}


def _same(value: Any = ".") -> Any:
    """A call whose value is its argument's (a path stays that path)."""
    return value


def _div(a: Any, b: Any) -> Any:
    """``a / b``: a path joined (``Path(x) / "y"``) or a number divided."""
    return posixpath.join(a, b) if isinstance(a, str) else a / b


def _method(name: str) -> Callable[..., Any]:
    """The method ``name`` of a value, called with its arguments (a value without it fails)."""
    return lambda receiver, *args: getattr(receiver, name)(*args)


_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Mod: operator.mod, ast.Div: _div,
}  # fmt: skip
_PURE: dict[str, Callable[..., Any]] = {
    **dict.fromkeys(_PY["same_value"], _same),
    **dict.fromkeys(("pathlib.Path.home", "Path.home"), lambda: "~"),
    **dict.fromkeys(("os.getenv", "os.environ.get"), _ENVIRON.get),
    **{function.__name__: function for function in (chr, list, tuple)},
    "os.path.join": posixpath.join,
    "os.path.dirname": lambda path: posixpath.dirname(path) or ".",
    "bytes.fromhex": bytes.fromhex,
    "base64.b64decode": base64.b64decode,
    "codecs.decode": codecs.decode,
}
"""The functions folded when their arguments are known, by dotted name."""
_METHODS: dict[str, Callable[..., Any]] = {
    **dict.fromkeys(("expanduser", "resolve", "absolute"), _same),
    **dict.fromkeys(("joinpath", "glob", "rglob", "iglob"), posixpath.join),
    **{m: _method(m) for m in ("join", "format", "strip", "decode", "encode", "lower", "split")},
}
"""The methods folded when their object and arguments are known, by name."""


def _imported(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """The names an import binds, each to the dotted name it stands for."""
    if isinstance(node, ast.Import):
        return {a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                for a in node.names}  # fmt: skip
    if any(a.name == "*" for a in node.names):  # the calls of tables.toml it may bind
        return {q.rpartition(".")[2]: q for q in CALLS if q.rpartition(".")[0] == node.module}
    return {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names if node.module}


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
        self.code, self.argv, self.depth, self.read_module = code, argv, depth, read_module
        self.folder = posixpath.dirname(argv[0]) if argv else ""  # where its own modules are
        self.attributes = {**_ATTRIBUTES, "sys.argv": list(argv)}  # the values of attributes
        self.tables: dict[str, dict[str, str]] = {}
        self.aliases: dict[str, str] = {}
        self.assigns: dict[str, list[ast.expr]] = {}
        self.funcs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.mutated: set[str] = set()
        self.calls_of: dict[str, list[ast.Call]] = {}
        self.out: list[Item] = []
        self.copies: list[tuple[str, str]] = []
        self.called: set[int] = set()
        self.bound: dict[str, list[Any]] = {}

    def note(self, name: str) -> None:
        """Note what cannot be decided (``script-dynamic-code``, ``script-dynamic-command``)."""
        self.out.append(("note", name))

    # the program's names: imports, assignments, functions, mutated lists
    def scan(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.aliases.update(_imported(node))
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
        for copy, original in self.copies * 3:  # a list changed through a copy of its name
            if copy in self.mutated or original in self.mutated:
                self.mutated |= {copy, original}

    def target(self, t: ast.expr, value: ast.expr, each: bool = False) -> None:
        if isinstance(t, ast.Name) and each and isinstance(value, (ast.List, ast.Tuple)):
            self.assigns.setdefault(t.id, []).extend(value.elts)
        elif isinstance(t, ast.Name) and each:  # an item of a loop: known for a call's result
            item = value if isinstance(value, ast.Call) else _UNKNOWN
            self.assigns.setdefault(t.id, []).append(item)
        elif isinstance(t, ast.Name):
            self.assigns.setdefault(t.id, []).append(value)
            self.copies += [(t.id, value.id)] if isinstance(value, ast.Name) else []
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            self.mutated.add(t.value.id)
        elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
            if self.qualname(t.value) in ("builtins", "os", "subprocess", "shutil", "sys"):
                self.note(CODE)  # a module's function replaced
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
                return self.exported(f"{base}.{attr[0]}") if attr and len(attr) == 1 else ""
            return f"{callee}()" if callee in ("ctypes.CDLL", "ctypes.cdll.LoadLibrary") else ""
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):  # a table
            tables = [v for v in self.assigns.get(node.value.id, []) if isinstance(v, ast.Dict)]
            found = {self.qualname(x, depth + 1) for x in tables[0].values} if tables else set()
            return found.pop() if len(found) == 1 else ""
        return ""

    def exported(self, name: str) -> str:
        """``name`` (``helper.run``) with what a local module re-exports under it followed
        (``os.system`` when ``helper.py`` says ``from os import system as run``)."""
        if name.startswith("builtins."):  # builtins.exec is exec
            return name[9:]
        for _ in range(4):
            module, _, attr = name.rpartition(".")
            if not module or self.read_module is None or module.partition(".")[0] in _STDLIB:
                break
            if module not in self.tables:
                path = module.replace(".", "/")
                text = self.folder and self.read_module(posixpath.join(self.folder, path))
                self.tables[module] = _exports(text or self.read_module(path) or "")
            name = self.tables[module].get(attr, name)
        return name

    # values: the Python values an expression can have, or None when one is unknown
    def values(self, node: ast.expr | None, depth: int = 0) -> list[Any] | None:
        """The values ``node`` can have (at most :data:`MAX_VALUES`), ``None`` when unknown:
        constants folded through the pure operations, functions and methods of ``_PURE``."""
        if node is None or depth > 12:
            return None
        if isinstance(node, ast.Constant):
            return [node.value]
        if isinstance(node, ast.Name):
            return self.name_values(node.id, depth)
        if isinstance(node, (ast.List, ast.Tuple)):
            make = tuple if isinstance(node, ast.Tuple) else list
            return self.apply(lambda *items: make(items), node.elts, depth)
        if isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.FormattedValue) else v for v in node.values]
            return self.apply(lambda *p: "".join(map(str, p)), parts, depth)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return self.apply(_OPERATORS[type(node.op)], [node.left, node.right], depth)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self.apply(operator.neg, [node.operand], depth)
        if isinstance(node, ast.Subscript):
            return self.apply(operator.getitem, [node.value, node.slice], depth)
        if isinstance(node, ast.Slice):
            return self.apply(slice, [node.lower, node.upper, node.step], depth)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
            return self.comprehension(node, depth)
        if isinstance(node, ast.Call):
            return self.call_values(node, depth)
        if isinstance(node, ast.Attribute):
            q = self.qualname(node)
            if q.startswith("signal.SIG"):  # a signal by its name: os.kill(pid, signal.SIGKILL)
                return [q[10:]]
            return [self.attributes[q]] if q in self.attributes else None
        return None

    def name_values(self, name: str, depth: int) -> list[Any] | None:
        """The values a name can have: what it is assigned, or what a parameter is passed."""
        if name in self.bound:
            return self.bound[name]
        if name == "__file__":
            return [self.argv[0] if self.argv else "prog.py"]
        if name in self.mutated:
            return None
        out: list[Any] = []
        for item in self.assigns[name] if name in self.assigns else self.passed(name) or ():
            got = self.values(item, depth + 1)
            if got is None:
                return None
            out += got
        return out[:MAX_VALUES] or None

    def apply(self, fn: Callable[..., Any], nodes: list[Any], depth: int) -> list[Any] | None:
        """``fn`` applied to every combination of the values of ``nodes`` (a ``None`` node
        stands for ``None``); ``None`` when a value is unknown or ``fn`` fails on it."""
        combos: list[list[Any]] = [[]]
        for node in nodes:
            got = [None] if node is None else self.values(node, depth + 1)
            if got is None or any(isinstance(v, str) and _HUGE.search(v) for v in got):
                return None  # unknown, or a format that would build a huge string
            combos = [c + [v] for c in combos for v in got][:MAX_VALUES]
        try:
            out = [fn(*combo) for combo in combos]
        except Exception:  # an operation the program would fail at: unknown
            return None
        return None if None in out else out

    def comprehension(self, node: ast.GeneratorExp | ast.ListComp, depth: int) -> list[Any] | None:
        """The list a one-loop comprehension builds over a known sequence."""
        gen = node.generators[0]
        if len(node.generators) > 1 or gen.ifs or not isinstance(gen.target, ast.Name):
            return None
        name = gen.target.id

        def build(sequence: Any) -> list[Any] | None:
            if not isinstance(sequence, (list, tuple, str)) or len(sequence) > 256:
                return None
            out = []
            for item in sequence:
                self.bound[name] = [item]
                out.append((self.values(node.elt, depth + 1) or [None])[0])  # None: unknown
            self.bound.pop(name, None)
            return None if None in out else out

        return self.apply(build, [gen.iter], depth)

    def passed(self, name: str) -> list[ast.expr] | None:
        """What the program's calls pass to the parameter ``name`` (a ``*name`` one gets a
        list); ``None`` when it is no parameter or a call passes nothing for it."""
        for fn in self.funcs.values():
            params, calls = [a.arg for a in fn.args.args], self.calls_of.get(fn.name, [])
            if name in params:
                i = params.index(name)
                return None if any(i >= len(c.args) for c in calls) else [c.args[i] for c in calls]
            if fn.args.vararg is not None and fn.args.vararg.arg == name:
                return [ast.List(elts=list(call.args)) for call in calls] or [ast.List(elts=[])]
        return None

    def call_values(self, node: ast.Call, depth: int) -> list[Any] | None:
        """The values a call of a pure function or method returns."""
        f, q = node.func, self.qualname(node.func)
        if q.startswith("tempfile."):
            return ["/tmp/\x00"]
        if q in _PURE:
            return self.apply(_PURE[q], list(node.args), depth)
        if isinstance(f, ast.Attribute) and f.attr in _METHODS:
            return self.apply(_METHODS[f.attr], [f.value, *node.args], depth)
        return None

    def texts(self, node: ast.expr | None) -> list[str] | None:
        """The values of ``node`` as text (a path, a command line), ``None`` when unknown."""
        return _texts(self.values(node) or [None])

    def argv_values(self, node: ast.expr | None) -> list[list[str]] | None:
        """The argv lists an expression can be (a string is a one-word argv)."""
        lists = [v if isinstance(v, (list, tuple)) else [v] for v in self.values(node) or [None]]
        argvs = [_texts(words) for words in lists]
        return None if None in argvs else [argv for argv in argvs if argv is not None]

    def listed(self, nodes: list[ast.expr]) -> list[list[str]] | None:
        """The argv lists the expressions ``nodes``, one word each, can be."""
        return self.argv_values(ast.List(elts=list(nodes)))


def _text(value: Any) -> str | None:
    """A value as the text a program would pass on (``None`` for one that is not text)."""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value) if isinstance(value, (str, int)) else None


def _texts(values: list[Any] | tuple[Any, ...]) -> list[str] | None:
    """``values`` as text, ``None`` when one is not text."""
    texts = [_text(v) for v in values]
    return None if None in texts else [t for t in texts if t is not None]
