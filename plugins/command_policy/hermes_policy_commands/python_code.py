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
from typing import Any

from .python_values import CALLS, CODE, COMMAND, COMMANDS, SINKS, Item, ModuleReader, _Values
from .tables import TABLES
from .words import UNKNOWN

__all__ = ["lower_python"]

_PY = TABLES["python"]
_METHODS: dict[str, str] = {**dict.fromkeys(_PY["method_commands"], "command"), **_PY["methods"]}
_DUNDERS = re.compile(r"^__(?:subclasses|globals|builtins|code|closure|dict|bases|mro|base)__$")
_FORKS = ("os.fork", "os.forkpty")
_UNCALLED = {**dict.fromkeys(SINKS, COMMAND), "sys.modules": CODE}
"""The notes of a name not called where it is named (a sink called elsewhere, the module table)."""


def lower_python(code: str, argv: list[str], read_module: ModuleReader | None = None) -> list[Item]:
    """The items the Python program ``code`` (run with ``argv``) lowers to."""
    return _Python(code, argv, read_module=read_module).items()


class _Python(_Values):
    def items(self) -> list[Item]:
        try:
            tree = ast.parse(self.code)
        except (SyntaxError, ValueError):  # its strings may still be commands
            strings = re.finditer(r"(['\"])((?:(?!\1).){2,200})\1", self.code)
            return [("note", "uncheckable"), *(("shell", m.group(2)) for m in strings)]
        self.scan(tree)
        nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.expr))]
        for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset)):
            if isinstance(node, ast.Call):
                self.call(node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.out += self.modules(node)
            elif isinstance(node, ast.While) and any(
                isinstance(n, ast.Call) and self.qualname(n.func) in _FORKS for n in ast.walk(node)
            ):
                self.note("fork-bomb")
            elif isinstance(node, ast.Attribute) and _DUNDERS.match(node.attr):
                self.note(CODE)
            elif isinstance(node, ast.Name) and node.id in ("globals", "__builtins__", "vars"):
                self.note(CODE)
            elif isinstance(node, ast.Attribute) and id(node) not in self.called:
                q = self.qualname(node)
                self.out += [("note", _UNCALLED[q])] if q in _UNCALLED else []
        return sorted(self.out, key=lambda item: item[0] != "folder")

    # calls: what the program does
    def call(self, node: ast.Call) -> None:
        q, f = self.qualname(node.func), node.func
        how = CALLS.get(q) or next((h for p, h in _PY["prefixes"].items() if q.startswith(p)), None)
        if how is None and isinstance(f, ast.Attribute):
            how = _METHODS.get(f.attr)
        if how is not None and how.startswith("script-"):
            self.note(how)  # a call that runs code or a command only known at run time
        elif how is not None:
            getattr(self, how)(q, node)

    def emit(self, kind: str, values: list[Any] | None, note: str = COMMAND) -> None:
        """An item of ``kind`` for each of ``values``, or the note ``note`` when unknown."""
        self.out += [("note", note)] if values is None else [(kind, v) for v in values]

    def import_call(self, q: str, node: ast.Call) -> None:
        names = self.texts(node.args[0]) if node.args else []
        self.out += [("module", m.replace(".", "/")) for m in names or []]
        if names is None and self.texts(node.args[-1]) is None:
            self.note(CODE)

    def attr_call(self, q: str, node: ast.Call) -> None:
        if node.args and self.texts(node.args[min(1, len(node.args) - 1)]) is None:
            self.note(CODE)

    def yaml_load(self, q: str, node: ast.Call) -> None:
        if not any(k.arg == "Loader" and "Safe" in ast.unparse(k.value) for k in node.keywords):
            self.note(CODE)

    def sys_path(self, q: str, node: ast.Call) -> None:
        folders = self.texts(node.args[-1]) if node.args else []
        self.emit("folder", folders and folders[:1], CODE)

    def shell(self, q: str, node: ast.Call) -> None:
        self.emit("shell", self.texts(node.args[0] if node.args else None))

    def start(self, q: str, node: ast.Call) -> None:
        kw = {k.arg: k.value for k in node.keywords}
        first = node.args[0] if node.args else kw.get("args")
        by_shell = isinstance(kw.get("shell"), ast.Constant) and bool(ast.literal_eval(kw["shell"]))
        if q.startswith("sh.") or q == "asyncio.create_subprocess_exec":  # the argv word by word
            words = self.listed([ast.Constant(q[3:]), *node.args] if q[:3] == "sh." else node.args)
        elif by_shell or q == "pty.spawn" and isinstance(first, ast.Constant):
            texts = self.texts(first)  # shell text, run by sh -c in the call's folder and stdin
            words = None if texts is None else [["sh", "-c", t] for t in texts]
        else:
            words = self.argv_values(first)
        self.started(words, kw)

    def started(self, words: list[list[str]] | None, kw: dict[str | None, ast.expr]) -> None:
        """Each argv the call may start, with its folder (``cwd=``) and what it reads on stdin
        (``input=`` text, else a pipe when ``input=`` or ``stdin=`` is given)."""
        cwd = (self.texts(kw["cwd"]) or [UNKNOWN])[0] if "cwd" in kw else None
        text, piped = self.texts(kw.get("input")), "input" in kw or "stdin" in kw
        stdin = ("text", text[0]) if text else ("other" if piped else "", None)
        self.emit("start", None if words is None else [(w, cwd, stdin) for w in words])

    def exec_family(self, q: str, node: ast.Call) -> None:
        args = node.args[1:] if q.startswith("os.spawn") else node.args  # os.spawn*: a mode first
        if q.endswith(("v", "ve", "vp", "vpe")) or q.startswith("os.posix_spawn"):
            words = self.argv_values(args[1] if len(args) > 1 else None)
        else:
            words = self.listed([e for e in args[1:] if not isinstance(e, ast.Dict)])
        self.started(words, {})

    def dynamic(self, q: str, node: ast.Call) -> None:
        texts = self.texts(node.args[0]) if node.args and self.depth <= 4 else None
        self.out += [("note", CODE)] if texts is None else []
        for t in texts or []:
            self.out += _Python(t, self.argv, self.depth + 1, self.read_module).items()

    def opened(self, q: str, node: ast.Call) -> None:
        """A file opened (``open(path, mode)``, ``path.open(mode)``): a read, or a write when its
        mode may be one."""
        f, args = node.func, list(node.args)
        if q not in CALLS and isinstance(f, ast.Attribute):  # a path's open(), not an archive's
            args = [] if q.startswith(("tarfile", "zipfile", "gzip")) else [f.value, *args]
        keywords = {k.arg: k.value for k in node.keywords}
        modes = self.texts(args[1] if len(args) > 1 else keywords.get("mode", ast.Constant("r")))
        writing = modes is None or any(set(m) & set("wax+") for m in modes)
        self.emit("write" if writing else "read", self.texts(args[0]) if args else [])

    def command(self, q: str, node: ast.Call) -> None:
        """A call lowered to the command that does the same (``[python.commands]``)."""
        f, args = node.func, list(node.args)
        template = COMMANDS.get(q)
        if template is None:  # a method: {0} is its object
            assert isinstance(f, ast.Attribute)
            template, args = _PY["method_commands"][f.attr], [f.value, *args]
        used = {int(i) for i in re.findall(r"\{(\d)", " ".join(template))}
        if max(used) < len(args):
            nodes = [args[i] if i in used else None for i in range(max(used) + 1)]
            lines = self.apply(lambda *v: [w.format(*map(_field, v)) for w in template], nodes, 0)
            writes = [("write", w[1]) if w[0] == ">" else ("argv", w) for w in lines or []]
            self.out += [("note", COMMAND)] if lines is None else writes

    def modules(self, node: ast.Import | ast.ImportFrom) -> list[Item]:
        """The local modules an import may read (``pkg/mod`` for ``pkg.mod``; a relative
        import's in the program's folder)."""
        if isinstance(node, ast.Import):
            return [("module", a.name.replace(".", "/")) for a in node.names]
        base = node.module or ""
        names = ([base] if base else []) + [f"{base}.{a.name}".lstrip(".") for a in node.names]
        paths = [
            posixpath.join(self.folder if node.level else "", n.replace(".", "/")) for n in names
        ]
        return [("module", posixpath.normpath(p)) for p in paths]


def _field(value: Any) -> Any:
    """A value as a template fills it in: bytes as text, a string or number as itself."""
    if not isinstance(value, (str, bytes, int)) and value is not None:
        raise TypeError("not text")
    return value.decode("latin-1") if isinstance(value, bytes) else value
