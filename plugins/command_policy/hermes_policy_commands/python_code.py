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
from collections.abc import Iterator
from typing import Any

from .python_values import CALLS, COMMANDS, SINKS, ModuleReader, _Values
from .tables import TABLES
from .words import UNKNOWN

__all__ = ["lower_python"]

Item = tuple[str, Any]
_PY = TABLES["python"]
_METHOD_COMMANDS = {name: tuple(words) for name, words in _PY["method_commands"].items()}
_PREFIXES: tuple[tuple[str, str], ...] = tuple(_PY["prefixes"].items())
_METHODS: dict[str, str] = {**dict.fromkeys(_METHOD_COMMANDS, "command"), **_PY["methods"]}
_FIELD = re.compile(r"\{(\d)")
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
                self.out += self.modules(node)
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
        if how is not None and how.startswith("script-"):
            self.note(how)  # a call that runs code or a command only known at run time
        elif how is not None:
            getattr(self, how)(q, node)

    def note(self, name: str) -> None:
        self.out.append(("note", name))

    def import_call(self, q: str, node: ast.Call) -> None:
        names = self.texts(node.args[0]) if node.args else []
        self.out += [("module", m.replace(".", "/")) for m in names or []]
        if node.args and not names and self.texts(node.args[-1]) is None:
            self.note("script-dynamic-code")

    def attr_call(self, q: str, node: ast.Call) -> None:
        if node.args and self.texts(node.args[min(1, len(node.args) - 1)]) is None:
            self.note("script-dynamic-code")

    def yaml_load(self, q: str, node: ast.Call) -> None:
        if not any(k.arg == "Loader" and "Safe" in ast.unparse(k.value) for k in node.keywords):
            self.note("script-dynamic-code")

    def sys_path(self, q: str, node: ast.Call) -> None:
        if not node.args:
            return
        folder = self.texts(node.args[-1])
        self.out += [("folder", folder[0])] if folder else [("note", "script-dynamic-code")]

    def shell(self, q: str, node: ast.Call) -> None:
        self.shell_text(node.args[0] if node.args else None)

    def shell_text(self, arg: ast.expr | None) -> None:
        texts = self.texts(arg)
        if texts is None:
            self.out.append(("note", "script-dynamic-command"))
        else:
            self.out += [("shell", t) for t in texts]

    def start(self, q: str, node: ast.Call) -> None:
        kw = {k.arg: k.value for k in node.keywords}
        first = node.args[0] if node.args else kw.get("args")
        shell = kw.get("shell")
        by_shell = isinstance(shell, ast.Constant) and bool(shell.value)
        if q.startswith("sh.") or q == "asyncio.create_subprocess_exec":  # the argv word by word
            program = [ast.Constant(q[3:])] if q.startswith("sh.") else []
            words = self.listed([*program, *node.args])
        elif by_shell or q == "pty.spawn" and isinstance(first, ast.Constant):
            texts = self.texts(first)  # shell text, run by sh -c in the call's folder and stdin
            words = None if texts is None else [["sh", "-c", t] for t in texts]
        else:
            words = self.argv_values(first) if first is not None else None
        self.emit_argv(words, kw)

    def emit_argv(self, words: list[list[str]] | None, kw: dict[str | None, ast.expr]) -> None:
        """Each argv the call may start, with its folder (``cwd=``) and what it reads on stdin
        (``input=`` text, else a pipe when ``input=`` or ``stdin=`` is given)."""
        if words is None:
            self.note("script-dynamic-command")
            return
        cwd = (self.texts(kw["cwd"]) or [UNKNOWN])[0] if "cwd" in kw else None
        text = self.texts(kw["input"]) if "input" in kw else None
        piped = "input" in kw or "stdin" in kw
        stdin = ("text", text[0]) if text else ("other" if piped else "", None)
        self.out += [("start", (w, cwd, stdin)) for w in words]

    def exec_family(self, q: str, node: ast.Call) -> None:
        args = node.args[1:] if q.startswith("os.spawn") else node.args  # os.spawn*: a mode first
        if q.endswith(("v", "ve", "vp", "vpe")) or q.startswith("os.posix_spawn"):
            words = self.argv_values(args[1]) if len(args) > 1 else None
        else:
            words = self.listed([e for e in args[1:] if not isinstance(e, ast.Dict)])
        self.emit_argv(words, {})

    def dynamic(self, q: str, node: ast.Call) -> None:
        texts = self.texts(node.args[0]) if node.args else None
        if texts is None or self.depth > 4:
            self.out.append(("note", "script-dynamic-code"))
            return
        for t in texts:
            self.out += _Python(t, self.argv, self.depth + 1, self.read_module).items()

    def path_open(self, q: str, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute) and not q.startswith(
            ("tarfile", "zipfile", "gzip")
        ):
            self.opened(node.func.value, node.args, node)

    def open_call(self, q: str, node: ast.Call) -> None:
        if node.args:
            self.opened(node.args[0], node.args[1:], node)

    def opened(self, file: ast.expr, args: list[ast.expr], node: ast.Call) -> None:
        """A file opened: a read, or a write when its mode (``args[0]`` or ``mode=``) may be."""
        mode_node = (
            args[0] if args else next((k.value for k in node.keywords if k.arg == "mode"), None)
        )
        mode = self.texts(mode_node) if mode_node is not None else ["r"]
        writing = mode is None or any(set(m) & set("wax+") for m in mode)
        path = self.texts(file)
        if path is None:
            self.note("script-dynamic-command")
        else:
            self.out += [("write" if writing else "read", p) for p in path]

    def command(self, q: str, node: ast.Call) -> None:
        """A call lowered to the command that does the same (``[python.commands]``)."""
        f = node.func
        if q in COMMANDS:
            template, args = COMMANDS[q], list(node.args)
        else:
            assert isinstance(f, ast.Attribute)
            template, args = _METHOD_COMMANDS[f.attr], [f.value, *node.args]
        used = {int(i) for word in template for i in _FIELD.findall(word)}
        if max(used) >= len(args):
            return
        nodes = [args[i] if i in used else None for i in range(max(used) + 1)]
        lines = self.apply(lambda *v: [w.format(*map(_field, v)) for w in template], nodes, 0)
        if lines is None:
            self.note("script-dynamic-command")
        for words in lines or []:
            self.out.append(("write", words[1]) if words[0] == ">" else ("argv", words))

    def modules(self, node: ast.Import | ast.ImportFrom) -> list[Item]:
        """The local modules an import may read (``pkg/mod`` for ``pkg.mod``; a relative
        import's in the program's folder)."""
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            base = node.module or ""
            names = ([base] if base else []) + [f"{base}.{a.name}".lstrip(".") for a in node.names]
        where = self.folder if isinstance(node, ast.ImportFrom) and node.level else ""
        paths = [posixpath.join(where, n.replace(".", "/")) for n in names]
        return [("module", posixpath.normpath(p)) for p in paths]


def _field(value: Any) -> Any:
    """A value as a template fills it in: bytes as text, a string or number as itself."""
    if not isinstance(value, (str, bytes, int)) and value is not None:
        raise TypeError("not text")
    return value.decode("latin-1") if isinstance(value, bytes) else value
