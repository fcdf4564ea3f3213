"""Front ends: what a Python, perl, ruby, node or php program would do, lowered to the shell form.

:func:`lower` answers items the shell lowering judges with the same rules: ``("shell", text)``
for a command line the program runs, ``("argv", words)`` for a program it starts or a file
operation written as the command that does the same (``shutil.rmtree(p)`` is ``rm -rf p``),
``("write", path)``/``("read", path)`` for files it opens, ``("module", path)`` for a local
module it imports, and ``("note", name)`` for what cannot be decided (code built at run time:
``script-dynamic-code``; a command or path only known at run time: ``script-dynamic-command``).
Python is read with :mod:`ast` (nothing runs); the other languages are scanned for their few
calls that run commands or touch files.
"""

from __future__ import annotations

import ast
import base64
import codecs
import posixpath
import re
import shlex
import sys
import tomllib
from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any, TypeVar

__all__ = ["lower"]

Item = tuple[str, Any]
ModuleReader = Callable[[str], "str | None"]
MAX_CODE = 200_000
MAX_VALUES = 8
T = TypeVar("T")
_TABLES = tomllib.loads((resources.files(__package__) / "tables.toml").read_text("utf-8"))
_PY, _FOREIGN = _TABLES["python"], _TABLES["foreign"]
_SHELL_SINKS, _ARGV_SINKS = frozenset(_PY["shell"]), frozenset(_PY["argv"])
_FILE_OPS = {name: tuple(words) for name, words in _PY["file_ops"].items()}
_PATH_METHODS = {name: tuple(words) for name, words in _PY["path_methods"].items()}
_DYNAMIC_CODE = frozenset(_PY["dynamic_code"])
_SAME_VALUE, _READ_CODE = frozenset(_PY["same_value"]), frozenset(_PY["read_code"])
_STDLIB = frozenset(sys.stdlib_module_names)
_DUNDERS = re.compile(r"^__(?:subclasses|globals|builtins|code|closure|dict|bases|mro|base)__$")


def lower(
    lang: str, code: str, argv: list[str], read_module: ModuleReader | None = None
) -> list[Item]:
    """The items the program ``code`` (of ``lang``, run with ``argv``) lowers to;
    ``read_module`` answers the text of a local Python module (``pkg/mod``), so a name one
    re-exports (``from os import system as run``) is followed."""
    if len(code) > MAX_CODE:
        return [("note", "uncheckable")]
    if lang == "python":
        return list(_Python(code, argv, read_module=read_module).items())
    return list(_foreign(lang, code))


# --- Python -------------------------------------------------------------------------------


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


class _Python:
    def __init__(
        self,
        code: str,
        argv: list[str],
        depth: int = 0,
        read_module: ModuleReader | None = None,
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

    def items(self) -> Iterator[Item]:
        try:
            tree = ast.parse(self.code)
        except (SyntaxError, ValueError):
            yield ("note", "uncheckable")
            for m in re.finditer(r"(['\"])((?:(?!\1).){2,200})\1", self.code):
                yield ("shell", m.group(2))
            return
        self.scan(tree)
        folder = posixpath.dirname(self.argv[0]) if self.argv else ""
        nodes = sorted(
            ast.walk(tree), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))
        )
        for node in nodes:
            if isinstance(node, ast.Call):
                self.call(node)
            elif isinstance(node, ast.Attribute) and _DUNDERS.match(node.attr):
                self.out.append(("note", "script-dynamic-code"))
            elif isinstance(node, ast.Name) and node.id in ("globals", "__builtins__", "vars"):
                self.out.append(("note", "script-dynamic-code"))
            elif isinstance(node, ast.While) and any(
                isinstance(n, ast.Call) and self.qualname(n.func) in ("os.fork", "os.forkpty")
                for n in ast.walk(node)
            ):
                self.out.append(("note", "fork-bomb"))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.out += self.modules(node, folder)
            elif isinstance(node, ast.Attribute) and id(node) not in self.called:
                q = self.qualname(node)
                if q in _SHELL_SINKS | _ARGV_SINKS or q in _FILE_OPS:
                    self.out.append(("note", "script-dynamic-command"))
                elif q == "sys.modules":
                    self.out.append(("note", "script-dynamic-code"))
        yield from sorted(self.out, key=lambda item: item[0] != "folder")

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
            elif each:
                unknown = ast.Name("__unknown__")
                self.assigns.setdefault(t.id, []).append(
                    value if isinstance(value, ast.Call) else unknown
                )
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
                self.target(e, ast.Name("__unknown__"))

    def scan_call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            if f.attr in ("append", "extend", "insert", "pop", "remove", "clear", "__setitem__"):
                self.mutated.add(f.value.id)
        if isinstance(f, ast.Name):
            self.calls_of.setdefault(f.id, []).append(node)
            if f.id in self.funcs or f.id not in ("print", "len", "list", "str", "tuple"):
                for a in node.args:
                    if isinstance(a, ast.Name) and f.id in self.funcs:
                        self.mutated.add(a.id)

    def qualname(self, node: ast.expr, depth: int = 0) -> str:
        """The dotted name a callee resolves to (``s.rmtree`` -> ``shutil.rmtree``)."""
        if depth > 8:
            return ""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.exported(self.aliases[node.id])
            for module in self.stars:
                if f"{module}.{node.id}" in _SHELL_SINKS | _ARGV_SINKS | set(_FILE_OPS):
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

    # calls: what the program does
    def call(self, node: ast.Call) -> None:
        q = self.qualname(node.func)
        if q in _SHELL_SINKS or q.endswith("CDLL().system"):
            self.shell_text(node.args[0] if node.args else None)
        elif q in _ARGV_SINKS or q.startswith("sh.") and len(q) > 3:
            self.start(q, node)
        elif q.startswith(("os.exec", "os.spawn", "os.posix_spawn")):
            self.exec_family(q, node)
        elif q in _FILE_OPS:
            self.file_op(_FILE_OPS[q], node)
        elif q in ("os.chmod", "os.chown", "os.kill", "os.killpg"):
            self.os_call(q, node)
        elif q in ("exec", "eval", "compile", "execfile"):
            self.dynamic(node)
        elif q in ("__import__", "importlib.import_module") and node.args:
            names = self.values(node.args[0])
            self.out += [("module", m.replace(".", "/")) for m in names or []]
            if not names and self.values(node.args[-1]) is None:
                self.out.append(("note", "script-dynamic-code"))
        elif q in ("getattr", "setattr") and node.args:
            if self.values(node.args[1] if len(node.args) > 1 else node.args[0]) is None:
                self.out.append(("note", "script-dynamic-code"))
        elif q in _DYNAMIC_CODE or q.startswith("ctypes."):
            self.out.append(("note", "script-dynamic-code"))
        else:
            self.other_call(q, node)

    def other_call(self, q: str, node: ast.Call) -> None:
        f = node.func
        if q in ("open", "io.open", "codecs.open"):
            self.open_call(node)
        elif q in ("yaml.load", "yaml.load_all") and not any(
            kw.arg == "Loader" and "Safe" in ast.unparse(kw.value) for kw in node.keywords
        ):
            self.out.append(("note", "script-dynamic-code"))
        elif q in ("urllib.request.urlretrieve",) and len(node.args) > 1:
            dest, url = self.values(node.args[1]), self.values(node.args[0])
            self.out.append(("argv", ["curl", "-o", (dest or ["\x00"])[0], (url or ["x"])[0]]))
        elif q in ("runpy.run_path", "runpy.run_module"):
            self.runpy(q, node)
        elif q in ("sys.path.insert", "sys.path.append") and node.args:
            folder = self.values(node.args[-1])
            self.out += [("folder", folder[0])] if folder else [("note", "script-dynamic-code")]
        elif q == "os.chdir" and node.args:
            where = self.values(node.args[0])
            self.out.append(("shell", "cd " + (shlex.quote(where[0]) if where else '"$__x"')))
        elif isinstance(f, ast.Attribute) and f.attr in ("extractall", "extract"):
            where = self.values(node.args[0]) if node.args else ["."]
            self.out.append(("argv", ["tar", "-x", "-C", (where or ["\x00"])[0]]))
        elif isinstance(f, ast.Attribute) and f.attr in ("execute", "executescript", "executemany"):
            sql = self.values(node.args[0]) if node.args else None
            self.out += [("argv", ["sqlite3", ":db", s]) for s in sql or []]
        elif isinstance(f, ast.Attribute) and f.attr in _PATH_METHODS:
            self.path_method(f, node)
        elif (
            isinstance(f, ast.Attribute)
            and f.attr in ("open",)
            and not q.startswith(("tarfile", "zipfile", "gzip"))
        ):
            self.open_call(node, self.values(f.value))
        elif q.startswith(("os.system.", "subprocess.")) or (q in _SHELL_SINKS and node.func):
            self.out.append(("note", "script-dynamic-command"))

    def shell_text(self, arg: ast.expr | None) -> None:
        texts = self.values(arg)
        if texts is None:
            self.out.append(("note", "script-dynamic-command"))
        else:
            self.out += [("shell", t) for t in texts]

    def start(self, q: str, node: ast.Call) -> None:
        kw = {k.arg: k.value for k in node.keywords}
        first = node.args[0] if node.args else kw.get("args")
        if q.startswith("sh."):
            rest = self.argv_values(ast.List(elts=list(node.args)))
            self.emit_argv([[q[3:], *w] for w in rest] if rest is not None else None, kw)
            return
        if q == "asyncio.create_subprocess_exec":
            self.emit_argv(self.argv_values(ast.List(elts=list(node.args))), kw)
            return
        shell = kw.get("shell")
        if (
            isinstance(shell, ast.Constant)
            and shell.value
            or q == "pty.spawn"
            and isinstance(first, ast.Constant)
        ):
            self.shell_text(first)
            return
        words = self.argv_values(first) if first is not None else None
        if words is None and first is not None:
            single = self.values(first)
            words = [[s] for s in single] if single is not None else None
        self.emit_argv(words, kw)

    def emit_argv(self, words: list[list[str]] | None, kw: dict[str | None, ast.expr]) -> None:
        if words is None:
            self.out.append(("note", "script-dynamic-command"))
            return
        cwd = self.values(kw["cwd"]) if "cwd" in kw else ["."]
        stdin = self.values(kw["input"]) if "input" in kw else None
        for w in words:
            line = " ".join(shlex.quote(x) for x in w)
            if stdin:
                line += " <<'__HERMES_EOF__'\n" + stdin[0] + "\n__HERMES_EOF__"
            elif "stdin" in kw and posixpath.basename(w[0] if w else "") in _READ_CODE:
                self.out.append(("note", "pipe-to-shell"))
            where = shlex.quote(cwd[0]) if cwd else '"$__x"'
            self.out.append(("shell", line if where == "." else f"cd {where} && {line}"))

    def exec_family(self, q: str, node: ast.Call) -> None:
        args = list(node.args)
        if q.startswith("os.spawn"):
            args = args[1:]
        if not args:
            return
        if q.endswith(("v", "ve", "vp", "vpe")) or q.startswith("os.posix_spawn"):
            words = self.argv_values(args[1]) if len(args) > 1 else None
        else:
            words = self.argv_values(
                ast.List(elts=[e for e in args[1:] if not isinstance(e, ast.Dict)])
            )
        self.emit_argv(words, {})

    def file_op(self, head: tuple[str, ...], node: ast.Call) -> None:
        words = self.argv_values(
            ast.List(elts=list(node.args[:2] if head[0] in ("mv", "cp", "ln") else node.args[:1]))
        )
        self.emit_argv([[*head, *w] for w in words] if words is not None else None, {})

    def os_call(self, q: str, node: ast.Call) -> None:
        first, second = [self.values(a) for a in node.args[:2]] + [None] * (2 - len(node.args[:2]))
        if not first or not second:
            self.out.append(("note", "script-dynamic-command"))
            return
        a, b = first[0], second[0]
        if q == "os.chmod":
            self.out.append(("argv", ["chmod", oct(int(b))[2:] if b.isdigit() else b, a]))
        elif q == "os.chown":
            self.out.append(("argv", ["chown", "root" if b == "0" else b, a]))
        else:
            signal = b.rsplit(".", 1)[-1].removeprefix("SIG") if not b.isdigit() else b
            self.out.append(("argv", ["kill", f"-{signal}", a]))

    def dynamic(self, node: ast.Call) -> None:
        texts = self.values(node.args[0]) if node.args else None
        if texts is None or self.depth > 4:
            self.out.append(("note", "script-dynamic-code"))
            return
        for t in texts:
            self.out += _Python(t, self.argv, self.depth + 1, self.read_module).items()

    def open_call(self, node: ast.Call, path: list[str] | None = None) -> None:
        args = list(node.args)
        if path is None:
            path = self.values(args.pop(0)) if args else None
        mode_node = (
            args[0] if args else next((k.value for k in node.keywords if k.arg == "mode"), None)
        )
        mode = self.values(mode_node) if mode_node is not None else ["r"]
        writing = mode is None or any(set(m) & set("wax+") for m in mode)
        if path is None:
            self.out.append(("note", "script-dynamic-command"))
        else:
            self.out += [("write" if writing else "read", p) for p in path]

    def path_method(self, f: ast.Attribute, node: ast.Call) -> None:
        path = self.values(f.value)
        if path is None:
            if f.attr not in ("mkdir",):
                self.out.append(("note", "script-dynamic-command"))
            return
        head = _PATH_METHODS[f.attr]
        for p in path:
            self.out.append(("argv", [*head, p]) if head else ("write", p))

    def runpy(self, q: str, node: ast.Call) -> None:
        target = self.values(node.args[0]) if node.args else None
        if target is None:
            self.out.append(("note", "script-dynamic-code"))
        elif q == "runpy.run_path":
            self.out.append(("shell", "python3 " + shlex.quote(target[0])))
        else:
            self.out.append(("shell", "python3 -m " + shlex.quote(target[0])))

    def modules(self, node: ast.Import | ast.ImportFrom, folder: str) -> list[Item]:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif node.level:
            base = (node.module or "").replace(".", "/")
            names = [f"./{base}/{a.name}" if base else f"./{a.name}" for a in node.names]
            names += [f"./{base}"] if base else []
        elif node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        out: list[Item] = []
        for n in names:
            if n.startswith("./"):
                path = posixpath.normpath(posixpath.join(folder, n[2:]))
            else:
                path = n.replace(".", "/")
            out.append(("module", path))
        return out


# --- perl, ruby, node, php ------------------------------------------------------------------

_STRING = _FOREIGN["string"]
_RUN, _CODE, _FILES = _FOREIGN["run"], _FOREIGN["code"], _FOREIGN["files"]


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


def _literals(text: str) -> list[str] | None:
    """The string literals of an argument list when every argument is one, else ``None``."""
    parts = [p.strip() for p in re.split(r",", text.replace("[", "").replace("]", "")) if p.strip()]
    out = []
    for p in parts:
        p = p.strip("[] ")
        if re.fullmatch(r"\{[^}]*\}", p):
            continue
        m = re.fullmatch(_STRING, p)
        if not m:
            return None
        out.append(codecs.decode(p[1:-1], "unicode_escape") if p[0] == '"' else p[1:-1])
    return out


def _argument(code: str, start: int) -> str:
    """The text of a call's arguments from ``start`` (after the open bracket or keyword)."""
    depth, i = 0, start
    closers = {"(": ")", "{": "}", "[": "]"}
    stack: list[str] = []
    while i < len(code) and i - start < 2000:
        c = code[i]
        if c in "\"'":
            m = re.compile(_STRING).match(code, i)
            i = m.end() if m else i + 1
            continue
        if c in closers:
            stack.append(closers[c])
        elif stack and c == stack[-1]:
            stack.pop()
        elif not stack and c in ");\n})":
            break
        i += 1
        depth += 1
    return code[start:i]


def _foreign(lang: str, code: str) -> Iterator[Item]:
    if re.search(_CODE[lang], code):
        yield ("note", "script-dynamic-code")
    if lang == "node" and "child_process" not in code:
        run = None
    else:
        run = re.compile(_RUN[lang])
    for m in run.finditer(code) if run else ():
        token = m.group(0)
        if token in ("`",) or token.startswith(("qx", "%x")):
            end = code.find({"`": "`", "(": ")", "{": "}", "/": "/"}[token[-1]], m.end())
            body = code[m.end() : end if end > 0 else len(code)]
            if re.search(r"[$#]\{|\$\w", body):
                yield ("note", "script-dynamic-command")
            else:
                yield ("shell", body)
            continue
        args = _literals(_argument(code, m.end()))
        if not args:
            yield ("note", "script-dynamic-command")
        else:
            yield ("shell", args[0]) if len(args) == 1 else ("argv", args)
    for m in re.finditer(_FILES[lang], code):
        yield from _file_call(m.group(0), _argument(code, m.end()))


def _file_call(token: str, argument: str) -> Iterator[Item]:
    mode = re.match(r"\s*['\"]([<>+]+)['\"]\s*,", argument)
    if mode:
        argument = argument[mode.end() :]
    args = _literals(argument.split(",")[0] if not token.startswith("open") else argument)
    if not args:
        yield ("note", "script-dynamic-command")
        return
    path = args[0]
    if token.lstrip().startswith("open") or token.startswith("fopen"):
        m = re.match(r"^([<>+|]*)\s*(.*)$", path)
        op, rest = (m.group(1), m.group(2)) if m else ("", path)
        writes = ">" in op or (mode is not None and ">" in mode.group(1)) or "+" in op
        yield ("write" if writes else "read", rest or path)
    elif (
        re.search(r"rm_rf|rm_r\b|rmtree|remove_tree|remove_dir", token)
        or ("rmSync" in token or "rmdirSync" in token)
        and "recursive" in argument
    ):
        yield ("argv", ["rm", "-rf", path])
    elif re.search(r"unlink|delete|rmdir|\brm\b|rmSync", token):
        yield ("argv", ["rm", "-f", path])
    else:
        yield ("write", path)
