"""The Python front end: what a Python program would do, read with :mod:`ast` (nothing runs).

Calls that run commands are lowered to shell text or an argv, file operations to the command that
does the same (``shutil.rmtree(p)`` is ``rm -rf p``), opened files to reads and writes, imports of
local modules to the modules to read; the values of names, f-strings, joins and the like are
followed as far as they are known statically (``tables.toml`` names the calls).
"""

from __future__ import annotations

import ast
import posixpath
import re
import shlex
from collections.abc import Iterator
from typing import Any

from .python_values import CALLS, FILE_OPS, SINKS, ModuleReader, _Values
from .tables import TABLES

__all__ = ["lower_python"]

Item = tuple[str, Any]
_PY = TABLES["python"]
_PATH_METHODS = {name: tuple(words) for name, words in _PY["path_methods"].items()}
_PREFIXES: tuple[tuple[str, str], ...] = tuple(_PY["prefixes"].items())
_METHODS: dict[str, str] = {**dict.fromkeys(_PATH_METHODS, "path_method"), **_PY["methods"]}
_READ_CODE = frozenset(_PY["read_code"])
_DUNDERS = re.compile(r"^__(?:subclasses|globals|builtins|code|closure|dict|bases|mro|base)__$")


def lower_python(code: str, argv: list[str], read_module: ModuleReader | None = None) -> list[Item]:
    """The items the Python program ``code`` (run with ``argv``) lowers to."""
    return list(_Python(code, argv, read_module=read_module).items())


class _Python(_Values):
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
                if q in SINKS:
                    self.out.append(("note", "script-dynamic-command"))
                elif q == "sys.modules":
                    self.out.append(("note", "script-dynamic-code"))
        yield from sorted(self.out, key=lambda item: item[0] != "folder")

    # calls: what the program does
    def call(self, node: ast.Call) -> None:
        q, f = self.qualname(node.func), node.func
        how = CALLS.get(q) or next((h for p, h in _PREFIXES if q.startswith(p)), None)
        if how is None and isinstance(f, ast.Attribute):
            how = _METHODS.get(f.attr)
        if how is not None:
            getattr(self, how)(q, node)

    def note(self, name: str) -> None:
        self.out.append(("note", name))

    def import_call(self, q: str, node: ast.Call) -> None:
        names = self.values(node.args[0]) if node.args else []
        self.out += [("module", m.replace(".", "/")) for m in names or []]
        if node.args and not names and self.values(node.args[-1]) is None:
            self.note("script-dynamic-code")

    def attr_call(self, q: str, node: ast.Call) -> None:
        if node.args and self.values(node.args[min(1, len(node.args) - 1)]) is None:
            self.note("script-dynamic-code")

    def dynamic_code(self, q: str, node: ast.Call) -> None:
        self.note("script-dynamic-code")

    def unknown_command(self, q: str, node: ast.Call) -> None:
        self.note("script-dynamic-command")

    def yaml_load(self, q: str, node: ast.Call) -> None:
        if not any(k.arg == "Loader" and "Safe" in ast.unparse(k.value) for k in node.keywords):
            self.note("script-dynamic-code")

    def urlretrieve(self, q: str, node: ast.Call) -> None:
        if len(node.args) > 1:
            dest, url = self.values(node.args[1]), self.values(node.args[0])
            self.out.append(("argv", ["curl", "-o", (dest or ["\x00"])[0], (url or ["x"])[0]]))

    def sys_path(self, q: str, node: ast.Call) -> None:
        if not node.args:
            return
        folder = self.values(node.args[-1])
        self.out += [("folder", folder[0])] if folder else [("note", "script-dynamic-code")]

    def chdir(self, q: str, node: ast.Call) -> None:
        where = self.values(node.args[0]) if node.args else ["."]
        if node.args:
            self.out.append(("shell", "cd " + (shlex.quote(where[0]) if where else '"$__x"')))

    def extract(self, q: str, node: ast.Call) -> None:
        where = self.values(node.args[0]) if node.args else ["."]
        self.out.append(("argv", ["tar", "-x", "-C", (where or ["\x00"])[0]]))

    def sql(self, q: str, node: ast.Call) -> None:
        sql = self.values(node.args[0]) if node.args else None
        self.out += [("argv", ["sqlite3", ":db", s]) for s in sql or []]

    def shell(self, q: str, node: ast.Call) -> None:
        self.shell_text(node.args[0] if node.args else None)

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
            rest = self.listed(node.args)
            self.emit_argv([[q[3:], *w] for w in rest] if rest is not None else None, kw)
            return
        if q == "asyncio.create_subprocess_exec":
            self.emit_argv(self.listed(node.args), kw)
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
            words = self.listed([e for e in args[1:] if not isinstance(e, ast.Dict)])
        self.emit_argv(words, {})

    def file_op(self, q: str, node: ast.Call) -> None:
        head = FILE_OPS[q]
        words = self.listed(node.args[:2] if head[0] in ("mv", "cp", "ln") else node.args[:1])
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

    def dynamic(self, q: str, node: ast.Call) -> None:
        texts = self.values(node.args[0]) if node.args else None
        if texts is None or self.depth > 4:
            self.out.append(("note", "script-dynamic-code"))
            return
        for t in texts:
            self.out += _Python(t, self.argv, self.depth + 1, self.read_module).items()

    def path_open(self, q: str, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute) and not q.startswith(
            ("tarfile", "zipfile", "gzip")
        ):
            self.open_call(q, node, self.values(node.func.value))

    def open_call(self, q: str, node: ast.Call, path: list[str] | None = None) -> None:
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

    def path_method(self, q: str, node: ast.Call) -> None:
        f = node.func
        assert isinstance(f, ast.Attribute)
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
