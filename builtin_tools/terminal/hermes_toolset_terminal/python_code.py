"""What a Python program would do to the machine, read from its source without running it.

:func:`effects` parses a program with :mod:`ast` and lists its *effects*, each written the way
the shell checker (:mod:`.danger`) already judges it:

- commands it runs: ``os.system``/``os.popen``/``subprocess.getoutput`` and
  ``subprocess.*(…, shell=True)`` strings as shell text; ``subprocess.run/call/check_call/
  check_output/Popen`` argument lists, ``os.exec*``, ``os.spawn*``, ``os.posix_spawn*``,
  ``pty.spawn`` and ``asyncio.create_subprocess_*`` as program and arguments (with ``cwd=``,
  ``executable=`` and ``input=``);
- file operations, as the shell command that does the same: ``shutil.rmtree`` is ``rm -r -f``,
  ``os.remove``/``unlink``/``Path.unlink`` ``rm -f``, ``os.rmdir``/``Path.rmdir`` ``rm -d``,
  ``os.rename``/``replace``/``shutil.move`` ``mv``, ``shutil.copy*`` ``cp -r``,
  ``open(…, "w"/"a"/"x"/"+")``/``Path.write_*`` a ``>``/``>>`` redirection, ``os.chmod``
  ``chmod MODE``, ``os.chown`` ``chown``, ``os.symlink`` ``ln -s``, ``os.mkdir``/``makedirs``
  ``mkdir -p``, ``os.truncate`` ``truncate``, ``os.kill`` ``kill``, archive extraction
  ``tar -x -C``, ``urlretrieve`` ``curl -o``;
- what cannot be decided: any of the calls above with an argument the reader cannot compute, a
  command-running or deleting function passed around as a value, code built or loaded at run
  time (``exec``/``eval``/``compile`` of computed text, ``__import__``/``importlib`` of
  computed names, ``getattr`` of computed names on ``os``-like modules, ``globals()``,
  reflection through ``__globals__``/``__subclasses__``/frames, ``ctypes``, unpickling), and a
  program that does not parse, is too big or imports more local modules than the budget.

Values are computed where they are constants or fold into constants: literals, names bound
(anywhere in the file, every binding counted) to such values, ``for`` loops over constant
sequences, string concatenation, ``%``, ``str.format``, f-strings, ``join``/``replace``/
``split`` and the other plain ``str`` methods, ``base64``/``bytes.fromhex``/``codecs`` decoding,
``os.path`` functions, ``pathlib`` paths, ``os.path.expanduser``/``Path.home()``/
``os.environ["HOME"]`` (the home folder, written ``~``), ``sys.argv`` (from the command line),
``__file__``, ``os.listdir``/``glob``/``Path.glob``/``iterdir``/``os.walk`` (their items as
glob patterns below the folder, which the shell rules read as such). A name bound to a list or
mapping that is changed in place or handed elsewhere is not a constant.

Local modules (``import helper`` with ``helper.py`` in the script's folder, ``from pkg import
mod``, ``runpy.run_path``, ``python -m mod`` from the working folder) are read through the same
reader, up to :data:`MAX_MODULES` files; a module that is not found there is an installed one
and is trusted. Nothing here runs any of the code it reads.
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import operator
import os
import posixpath
import shlex
import string
import sys
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_ALTERNATIVES",
    "MAX_MODULES",
    "MAX_SOURCE",
    "Effect",
    "FolderLister",
    "PythonCommand",
    "effects",
    "python_command",
    "written_paths",
]

MAX_SOURCE = 128_000
"""The most characters of Python (the program and its local modules together) read per command;
more is uncheckable."""
MAX_MODULES = 16
"""The most local modules read for one command; importing more makes it uncheckable."""
MAX_ALTERNATIVES = 16
"""The most values one expression is followed with (a loop over a longer list is unknown)."""
_MAX_STRING = 65_536
_MAX_DEPTH = 40
_MAX_EXEC_DEPTH = 4

FileReader = Callable[[str], "str | None"]
FolderLister = Callable[[str], "Collection[str] | None"]
"""Lists the Python module names a folder holds (``helper`` for ``helper.py`` or ``helper/``
with Python files in it), or ``None`` when it cannot tell."""


@dataclass(frozen=True)
class Effect:
    """One thing a program does, as the shell checker reads it.

    :param kind: ``shell`` (``text`` is run by ``/bin/sh``), ``argv`` (``words`` is a program
        and its arguments, or the shell command doing the same file operation, with
        ``redirects`` and ``stdin``), ``dynamic-command`` or ``dynamic-code`` (``text`` says what
        could not be decided), or ``uncheckable`` (the program could not be read).
    :param cwd: the folder the effect happens in, when the program chose one (``None``: the
        folder the program runs in; ``"$PWD"``: one computed at run time).
    :param where: ``file:line`` of the call.
    """

    kind: str
    words: tuple[str, ...] = ()
    text: str = ""
    redirects: tuple[tuple[str, str], ...] = ()
    stdin: str | None = None
    cwd: str | None = None
    where: str = ""


# --- values -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ref:
    """A module, or something a module holds (``os``, ``os.system``, ``pathlib.Path``)."""

    name: str


@dataclass(frozen=True)
class _Local:
    """A local module that was read (its names are looked up in its own table)."""

    module: _Module


@dataclass(frozen=True)
class _Path:
    """A ``pathlib`` path."""

    path: str


_Values = list[Any] | None  # the values an expression may have; None: unknown

_MODULE_ALIASES = {
    "posix": "os",
    "nt": "os",
    "posixpath": "os.path",
    "ntpath": "os.path",
    "commands": "subprocess",
    "_pickle": "pickle",
    "cPickle": "pickle",
    "pathlib.PosixPath": "pathlib.Path",
    "pathlib.PurePath": "pathlib.Path",
    "pathlib.PurePosixPath": "pathlib.Path",
    "pathlib.WindowsPath": "pathlib.Path",
    "io.open": "builtins.open",
    "codecs.open": "builtins.open",
    "os.getcwdb": "os.getcwd",
    "shutil.copy2": "shutil.copy",
    "shutil.copyfile": "shutil.copy",
    "shutil.copytree": "shutil.copy",
    "os.renames": "os.rename",
    "os.replace": "os.rename",
    "os.removedirs": "os.rmdir",
    "os.unlink": "os.remove",
    "os.makedirs": "os.mkdir",
    "os.lchmod": "os.chmod",
    "os.lchown": "os.chown",
    "os.link": "os.symlink",
    "os.killpg": "os.kill",
    "subprocess.call": "subprocess.run",
    "subprocess.check_call": "subprocess.run",
    "subprocess.check_output": "subprocess.run",
    "subprocess.Popen": "subprocess.run",
    "subprocess.getstatusoutput": "os.system",
    "subprocess.getoutput": "os.system",
    "os.popen": "os.system",
    "platform.popen": "os.system",
    "asyncio.create_subprocess_shell": "os.system",
    "pexpect.run": "os.system",
    "pexpect.spawn": "os.system",
    "os.posix_spawnp": "os.posix_spawn",
    "urllib.urlretrieve": "urllib.request.urlretrieve",
    "zipfile.ZipFile.extractall": "tarfile.extractall",
    "shutil.unpack_archive": "tarfile.extractall",
    "builtins.bytes.fromhex": "bytes.fromhex",
    "builtins.bytearray.fromhex": "bytes.fromhex",
    "builtins.str.join": "str.join",
}
for _suffix in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe"):
    _MODULE_ALIASES[f"os.exec{_suffix}"] = "os.exec"
    _MODULE_ALIASES[f"os.spawn{_suffix}"] = "os.spawn"

# Every function whose use the reader must understand: one that runs a command, changes files
# or runs code; passed around as a value it is undecidable.
_SINKS = frozenset(
    {"os.system", "subprocess.run", "os.exec", "os.spawn", "os.posix_spawn", "pty.spawn",
     "asyncio.create_subprocess_exec", "shutil.rmtree", "os.remove", "os.rmdir", "os.rename",
     "shutil.move", "shutil.copy", "builtins.open", "os.open", "os.chmod", "os.chown",
     "shutil.chown", "os.symlink", "os.mkdir", "os.truncate", "os.kill", "tarfile.extractall",
     "urllib.request.urlretrieve", "builtins.exec", "builtins.eval", "builtins.compile",
     "builtins.__import__", "importlib.import_module", "importlib.__import__", "runpy.run_path",
     "runpy.run_module", "builtins.getattr", "builtins.setattr", "builtins.globals",
     "builtins.locals", "builtins.vars", "os.fork", "os.forkpty"}
)  # fmt: skip
_SENSITIVE_MODULES = frozenset(
    {"os", "subprocess", "shutil", "pty", "builtins", "importlib", "runpy", "ctypes", "sys",
     "asyncio.subprocess", "pexpect"}
)  # fmt: skip
_NATIVE_MODULES = ("ctypes", "_ctypes", "cffi", "_posixsubprocess")
_LOADERS = frozenset(
    {"pickle.load", "pickle.loads", "pickle.Unpickler", "marshal.load", "marshal.loads",
     "dill.load", "dill.loads", "cloudpickle.load", "cloudpickle.loads", "joblib.load",
     "shelve.open", "yaml.unsafe_load", "yaml.unsafe_load_all", "pandas.read_pickle",
     "jsonpickle.decode", "importlib.util.spec_from_file_location", "importlib.util.exec_module",
     "importlib.machinery.SourceFileLoader", "importlib.util.module_from_spec", "imp.load_source",
     "imp.load_module", "imp.load_compiled", "zipimport.zipimporter", "code.interact",
     "code.InteractiveInterpreter", "code.InteractiveConsole", "types.FunctionType",
     "types.CodeType", "sys._getframe", "inspect.currentframe", "inspect.stack",
     "gc.get_objects", "gc.get_referrers"}
)  # fmt: skip
_REFLECTION = frozenset(
    {"__globals__", "__subclasses__", "__builtins__", "__import__", "__code__", "__closure__",
     "__loader__", "__getattribute__", "__reduce__", "__reduce_ex__", "__setstate__",
     "f_globals", "f_locals", "f_builtins", "f_back", "gi_frame", "cr_frame", "ag_frame",
     "tb_frame", "func_globals"}
)  # fmt: skip
# Methods that change a path whatever object they are called on (pathlib's names).
_PATH_WRITERS = frozenset(
    {"unlink", "rmdir", "write_text", "write_bytes", "symlink_to", "hardlink_to", "touch",
     "lchmod", "chmod", "rmtree"}
)  # fmt: skip
_RUNNERS = frozenset(
    {"system", "popen", "getoutput", "getstatusoutput", "check_output", "check_call", "spawnv",
     "spawnl", "execv", "execl", "execvp", "execlp"}
)  # fmt: skip
_MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add",
     "discard", "sort", "reverse", "popitem", "__setitem__", "__delitem__", "__iadd__"}
)  # fmt: skip
_STR_METHODS = frozenset(
    {"strip", "lstrip", "rstrip", "lower", "upper", "replace", "removeprefix", "removesuffix",
     "split", "rsplit", "splitlines", "join", "encode", "decode", "format", "title",
     "capitalize", "casefold", "swapcase", "zfill", "expandtabs", "partition", "rpartition",
     "center", "ljust", "rjust"}
)  # fmt: skip
_STARTUP_MODULES = frozenset(sys.builtin_module_names) | {
    "os", "sys", "io", "abc", "codecs", "site", "stat", "posixpath", "genericpath",
    "_collections_abc", "encodings", "_sitebuiltins", "_distutils_hack",
}  # fmt: skip
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
_HOME = "~"


class _Unknown(Exception):
    """Raised inside the evaluator when a value cannot be computed."""


@dataclass
class _Binding:
    kind: str  # expr | import | iter | unpack | def | param | unknown
    node: Any = None
    extra: Any = None


@dataclass(eq=False)
class _Module:
    """One parsed file: its tree, where each name is bound, and what it said about itself."""

    name: str
    path: str
    tree: ast.Module
    bindings: dict[str, list[_Binding]] = field(default_factory=dict)
    parents: dict[int, ast.AST] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    mutated: set[str] = field(default_factory=set)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    functions_calls: dict[str, list[ast.Call]] = field(default_factory=dict)
    handed: dict[str, list[ast.Call]] = field(default_factory=dict)
    nodes: list[ast.AST] = field(default_factory=list)
    chdir_calls: list[ast.Call] = field(default_factory=list)
    mutable_names: set[str] | None = None


# --- the reader ---------------------------------------------------------------------------------


class _Reader:
    """Reads one program (and its local modules) and collects its effects."""

    def __init__(
        self,
        argv: Sequence[str],
        read: FileReader | None,
        list_folder: FolderLister | None,
    ) -> None:
        self.sys_argv = list(argv)
        self.read = read
        self.list_folder = list_folder
        self.effects: list[Effect] = []
        self._added: set[Effect] = set()
        self.written: set[str] = set()
        self.root = "."
        self.extra_paths: list[str] = []
        self.sys_path_marker = ["\0sys.path"]
        self.files_read: set[str] = set()
        self.budget = MAX_SOURCE
        self.modules: dict[str, _Module | None] = {}
        self.missing: set[str] = set()
        self.listings: dict[str, Collection[str] | None] = {}
        self.chdirs: list[str] = []
        self.exec_depth = 0
        self._evaluating: set[tuple[int, str]] = set()
        self._names: dict[tuple[int, str], list[Any] | _Unknown] = {}
        self._volatile = 0  # inside a comprehension: names are rebound, nothing is cached
        self.depth = 0

    # -- results -----------------------------------------------------------------------------

    def add(self, effect: Effect) -> None:
        for path in written_paths(effect):
            self.written.add(posixpath.normpath(path))
        if effect not in self._added and len(self.effects) < 2000:
            self._added.add(effect)
            self.effects.append(effect)

    def unsure(self, kind: str, module: _Module, node: ast.AST, what: str) -> None:
        segment = _segment(module, node)
        self.add(Effect(kind, text=f"{what}: {segment}", where=_where(module, node)))

    # -- modules -----------------------------------------------------------------------------

    def load(self, source: str, name: str, path: str) -> _Module | None:
        """Parse ``source`` and index it; ``None`` (and an uncheckable effect) when it cannot
        be read."""
        self.budget -= len(source)
        if self.budget < 0:
            self.add(Effect("uncheckable", text=f"more Python than the checker reads ({path})"))
            return None
        try:
            tree = ast.parse(source, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            self.add(Effect("uncheckable", text=f"Python that does not parse ({path})"))
            return None
        module = _Module(name, path, tree)
        _index(module)
        return module

    def run_module(self, module: _Module) -> None:
        """Collect the effects of every call and reference in ``module``."""
        self.chdirs.extend(self._chdirs(module))
        self._sys_path(module)
        for node in module.nodes:
            if isinstance(node, ast.Call):
                self.call(module, node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports(module, node)
            elif isinstance(node, (ast.Name, ast.Attribute)):
                self.reference(module, node)

    def local_module(self, module: _Module, dotted: str, level: int = 0) -> _Module | None:
        """The local module ``dotted`` imports from ``module`` (read on first use), or
        ``None`` when it is not a local one (an installed module, trusted)."""
        folder = posixpath.dirname(module.path)
        if level > 1:
            for _ in range(level - 1):
                folder = posixpath.dirname(folder)
        parts = [p for p in dotted.split(".") if p]
        if not parts:
            parts = ["__init__"]
        top = parts[0]
        if level:
            places = [folder]
        else:  # absolute: from the script's folder, then the folders it adds to sys.path
            places = [f for f in self.search_path() if self._is_local(f, top)]
        for place in places:
            loaded, found = self._module_at(place, parts, dotted)
            if found:
                return loaded
        return None

    def _module_at(self, folder: str, parts: list[str], dotted: str) -> tuple[_Module | None, bool]:
        """The module ``parts`` below ``folder`` (read on first use), and whether it exists."""
        key = posixpath.normpath(posixpath.join(folder or ".", *parts))
        if key in self.missing:
            return None, False
        if key in self.modules:
            return self.modules[key], True
        self.modules[key] = None
        if len(self.modules) > MAX_MODULES:
            self.add(Effect("uncheckable", text="more local modules than the checker reads"))
            return None, True
        candidates = [key + ".py", posixpath.join(key, "__init__.py")]
        source = None
        for candidate in candidates:
            source = self._read(candidate)
            if source is not None:
                break
        if source is None:
            # neither file reads: not there, or a namespace package (no code of its own)
            del self.modules[key]
            self.missing.add(key)
            return None, False
        loaded = self.load(source, dotted, candidate)
        self.modules[key] = loaded
        if loaded is not None:
            self.run_module(loaded)
        return loaded, True

    def search_path(self) -> list[str]:
        """The folders absolute imports are looked for in: the script's, then the constant
        folders the program adds to ``sys.path`` (a computed one is undecidable)."""
        return [self.root, *self.extra_paths]

    def _sys_path(self, module: _Module) -> None:
        for node in module.nodes:
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in ("insert", "append", "extend", "addsitedir"):
                continue
            target = self._values(module, node.func.value)
            if not target or not any(
                (isinstance(t, list) and t == self.sys_path_marker)
                or (isinstance(t, _Ref) and t.name == "site")
                for t in target
            ):
                continue
            argument = node.args[-1] if node.args else None
            values = self._values(module, argument) if argument is not None else None
            if values is None:
                self.unsure("dynamic-code", module, node, "modules found in a computed folder")
                continue
            for value in values:
                for item in value if isinstance(value, (list, tuple)) else [value]:
                    text = _text(item)
                    if text is None:
                        self.unsure("dynamic-code", module, node, "a computed module folder")
                    elif text not in self.extra_paths:
                        self.extra_paths.append(posixpath.normpath(text))

    def _read(self, path: str) -> str | None:
        if self.read is None:
            return None
        self.files_read.add(posixpath.normpath(path))
        try:
            return self.read(path)
        except Exception:  # a reader that fails reads nothing
            return None

    def _listing(self, folder: str) -> Collection[str] | None:
        if folder not in self.listings:
            try:
                self.listings[folder] = self.list_folder(folder) if self.list_folder else None
            except Exception:  # a lister that fails: fall back to reading each candidate
                self.listings[folder] = None
        return self.listings[folder]

    def _is_local(self, folder: str, top: str) -> bool:
        if top in _STARTUP_MODULES:
            return False  # imported before the script's folder is searched
        listing = self._listing(folder)
        if listing is not None:
            return top in listing
        return top not in _STDLIB  # no listing: installed standard modules are not looked for

    # -- imports -----------------------------------------------------------------------------

    def imports(self, module: _Module, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _NATIVE_MODULES:
                    self.unsure("dynamic-code", module, node, "native code (ctypes)")
                self.local_module(module, alias.name)
            return
        base = node.module or ""
        if base.split(".")[0] in _NATIVE_MODULES:
            self.unsure("dynamic-code", module, node, "native code (ctypes)")
        local = self.local_module(module, base, node.level) if (base or node.level) else None
        if local is not None or node.level:
            for alias in node.names:
                if alias.name != "*":
                    sub = f"{base}.{alias.name}" if base else alias.name
                    self.local_module(module, sub, node.level)

    # -- references ----------------------------------------------------------------------------

    def reference(self, module: _Module, node: ast.Name | ast.Attribute) -> None:
        """A command-running function or ``os``-like module used other than by calling it (or
        reading an attribute of it) cannot be followed; neither can reflection."""
        if isinstance(node, ast.Attribute):
            if node.attr == "modules" and self._is_sensitive(module, node.value):
                self.unsure("dynamic-code", module, node, "modules looked up at run time")
                return
            if node.attr in _REFLECTION or (
                node.attr == "__dict__" and self._is_sensitive(module, node.value)
            ):
                self.unsure("dynamic-code", module, node, "reflection")
                return
            if isinstance(node.ctx, (ast.Store, ast.Del)) and self._is_sensitive(
                module, node.value, modules_only=True
            ):
                self.unsure("dynamic-code", module, node, "a module's function replaced")
                return
        elif node.id in ("__builtins__", "__import__") and isinstance(node.ctx, ast.Load):
            if module.bindings.get(node.id) is None:
                self.unsure("dynamic-code", module, node, "reflection")
                return
        if not isinstance(node.ctx, ast.Load):
            return
        parent = module.parents.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            return
        if isinstance(parent, ast.Attribute):
            values = self._values(module, node)
            if values and any(
                isinstance(v, _Ref) and v.name in _SINKS and v.name not in _SENSITIVE_MODULES
                for v in values
            ):  # os.system.__call__(…): a function's attribute, not a module's
                self.unsure("dynamic-command", module, node, "a command runner's attribute")
            return
        if (
            isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr))
            and all(isinstance(t, ast.Name) for t in _targets(parent))
            and not isinstance(module.parents.get(id(parent)), ast.ClassDef)
        ):
            return  # an alias: calls through it are followed (a class attribute is not)
        if isinstance(parent, ast.Call) and node in parent.args[:1]:
            func = self._values(module, parent.func)
            if func and all(isinstance(f, _Ref) and f.name in _INTROSPECTION for f in func):
                return  # getattr(os, "system"), hasattr(os, "fork"), callable(...)
        values = self._values(module, node)
        if not values:
            return
        for value in values:
            if isinstance(value, _Ref) and (
                value.name in _SINKS or value.name in _SENSITIVE_MODULES
            ):
                if value.name in ("builtins.open", "builtins.vars", "builtins.getattr"):
                    continue  # open passed as a value reads files unless given a mode
                self.unsure(
                    "dynamic-command" if value.name not in _CODE_RUNNERS else "dynamic-code",
                    module,
                    node,
                    f"{value.name} used as a value",
                )
                return

    def _is_sensitive(self, module: _Module, node: ast.AST, modules_only: bool = False) -> bool:
        values = self._values(module, node)
        if not values:
            return False
        for value in values:
            if isinstance(value, _Ref):
                top = value.name.split(".")[0]
                if value.name in _SENSITIVE_MODULES or (
                    not modules_only and top in _SENSITIVE_MODULES
                ):
                    return True
                if modules_only and "." not in value.name:
                    return True  # any module's attributes replaced (builtins.open = …)
            if isinstance(value, _Local) and modules_only:
                return True
        return False

    # -- calls -------------------------------------------------------------------------------

    def call(self, module: _Module, node: ast.Call) -> None:
        funcs = self._values(module, node.func)
        if funcs is None:
            self._unknown_receiver(module, node)
            return
        for func in funcs:
            if isinstance(func, _Ref):
                name = _MODULE_ALIASES.get(func.name, func.name)
                handler = _HANDLERS.get(name)
                if handler is not None:
                    try:
                        handler(self, module, node)
                    except _Unknown as exc:
                        self.unsure(
                            "dynamic-code" if name in _CODE_RUNNERS else "dynamic-command",
                            module,
                            node,
                            str(exc) or "a value computed at run time",
                        )
                elif name.startswith("sh.") and name.count(".") == 1:
                    self._sh_command(module, node, name[3:])
                elif name in _LOADERS or name.rsplit(".", 1)[0] in _LOADERS:
                    if not _safe_loader(node):
                        self.unsure("dynamic-code", module, node, "code loaded at run time")
                elif name.split(".")[0] in _NATIVE_MODULES:
                    self.unsure("dynamic-code", module, node, "native code (ctypes)")
            elif isinstance(func, _Path) and isinstance(node.func, ast.Attribute):
                pass  # handled through the path method (see _path_method)
        if isinstance(node.func, ast.Attribute):
            self._method(module, node, funcs)

    def _method(self, module: _Module, node: ast.Call, funcs: list[Any]) -> None:
        func = node.func
        assert isinstance(func, ast.Attribute)
        receivers = self._values(module, func.value)
        name = func.attr
        if receivers is None:
            self._unknown_receiver(module, node)
            return
        for receiver in receivers:
            if isinstance(receiver, _Path):
                try:
                    self._path_method(module, node, receiver.path, name)
                except _Unknown as exc:
                    self.unsure("dynamic-command", module, node, str(exc) or "a computed path")

    def _sh_command(self, module: _Module, node: ast.Call, program: str) -> None:
        """``sh.rm("-rf", "/")`` (the ``sh`` package runs the program named by the
        attribute)."""
        if program in ("Command", "which", "ErrorReturnCode", "RunningCommand", "contrib", "glob"):
            return
        try:
            if any(isinstance(a, ast.Starred) for a in node.args):
                raise _Unknown("arguments unpacked at run time")
            words = [self._strings(module, a) for a in node.args]
            for argv in _product(words):
                self.argv([program.replace("_", "-"), *argv], _where(module, node))
        except _Unknown as exc:
            self.unsure("dynamic-command", module, node, str(exc))

    def _unknown_receiver(self, module: _Module, node: ast.Call) -> None:
        """A method of an object the reader cannot follow: pathlib's file-changing names and
        command runners' names are undecidable."""
        func = node.func
        if not isinstance(func, ast.Attribute):
            return
        name = func.attr
        positional = len(node.args)
        if name in _PATH_WRITERS or (
            name in ("rename", "replace") and positional == 1 and not node.keywords
            and not isinstance(node.args[0], (ast.Dict, ast.Constant))
        ):  # fmt: skip
            receiver = self._values(module, func.value)
            if receiver is None or any(isinstance(r, _Path) for r in receiver):
                self.unsure("dynamic-command", module, node, f"{name}() of a computed path")
        elif name in ("execute", "executescript", "executemany") and node.args:
            statements = self._values(module, node.args[0])  # SQL: judged by the SQL rules
            for statement in statements or []:
                if isinstance(statement, str):
                    self.argv(["sqlite3", "database", statement], _where(module, node))
        elif name == "extractall":
            try:
                targets = self._keyword(module, node, "path", 0, ".")
                for target in targets:
                    text = _text(target)
                    if text is None:
                        raise _Unknown("a computed folder")
                    self.argv(["tar", "-x", "-f", "archive", "-C", text], _where(module, node))
            except _Unknown as exc:
                self.unsure("dynamic-command", module, node, str(exc))
        elif name in _RUNNERS:
            receiver = self._values(module, func.value)
            if receiver is not None:
                return
            if positional and _is_constant_text(self, module, node.args[0]):
                for text in self._strings(module, node.args[0]):
                    self.add(Effect("shell", text=text, where=_where(module, node)))
            else:
                self.unsure("dynamic-command", module, node, f"{name}() of a computed command")

    def _path_method(self, module: _Module, node: ast.Call, path: str, name: str) -> None:
        where = _where(module, node)
        args = node.args
        if name == "unlink":
            self.argv(["rm", "-f", path], where)
        elif name == "rmdir":
            self.argv(["rm", "-d", path], where)
        elif name in ("write_text", "write_bytes", "touch"):
            self.argv(["touch", path], where)
            self.add(Effect("argv", redirects=((">", path),), where=where))
        elif name == "open":
            mode = self._keyword(module, node, "mode", 0, "r")
            for m in mode:
                self._open(path, m, where)
        elif name in ("rename", "replace") and args:
            for target in self._paths(module, args[0]):
                self.argv(["mv", path, target], where)
        elif name in ("symlink_to", "hardlink_to") and args:
            for target in self._paths(module, args[0]):
                self.argv(["ln", "-s", target, path], where)
        elif name in ("chmod", "lchmod") and args:
            for mode in self._values_or_raise(module, args[0]):
                self.argv(["chmod", _mode(mode), path], where)
        elif name == "mkdir":
            self.argv(["mkdir", "-p", path], where)
        elif name == "rmtree":  # Path.rmtree (rare libraries)
            self.argv(["rm", "-r", "-f", path], where)

    # -- the effects of sinks --------------------------------------------------------------------

    def argv(
        self,
        words: Sequence[str],
        where: str,
        *,
        cwd: str | None = None,
        stdin: str | None = None,
    ) -> None:
        self.add(Effect("argv", words=tuple(words), stdin=stdin, cwd=cwd, where=where))

    def _open(self, path: str, mode: Any, where: str) -> None:
        if not isinstance(mode, str):
            raise _Unknown("a computed file mode")
        if any(c in mode for c in "wax+"):
            symbol = ">>" if "a" in mode else ">"
            self.add(Effect("argv", redirects=((symbol, path),), where=where))

    # -- evaluation ----------------------------------------------------------------------------

    def _values(self, module: _Module, node: ast.AST) -> _Values:
        try:
            return self.evaluate(module, node)
        except _Unknown:
            return None
        except (RecursionError, MemoryError, OverflowError, ValueError, TypeError):
            return None

    def _values_or_raise(self, module: _Module, node: ast.AST) -> list[Any]:
        values = self._values(module, node)
        if values is None:
            raise _Unknown(f"{_segment(module, node)} is computed at run time")
        return values

    def _strings(self, module: _Module, node: ast.AST) -> list[str]:
        out = []
        for value in self._values_or_raise(module, node):
            text = _text(value)
            if text is None:
                raise _Unknown(f"{_segment(module, node)} is not a string")
            out.append(text)
        return out

    def _paths(self, module: _Module, node: ast.AST) -> list[str]:
        out = []
        for value in self._values_or_raise(module, node):
            if isinstance(value, int) and not isinstance(value, bool):
                raise _Unknown("a file descriptor")
            text = _text(value)
            if text is None:
                raise _Unknown(f"{_segment(module, node)} is not a path")
            out.append(text)
        return out

    def _argvs(self, module: _Module, node: ast.AST) -> list[list[str]]:
        out = []
        for value in self._values_or_raise(module, node):
            if isinstance(value, (list, tuple)):
                words = [_text(v) for v in value]
                if any(w is None for w in words):
                    raise _Unknown(f"{_segment(module, node)} holds values that are not strings")
                out.append([w for w in words if w is not None])
            else:
                text = _text(value)
                if text is None:
                    raise _Unknown(f"{_segment(module, node)} is not a command")
                out.append([text])
        return out

    def _keyword(
        self, module: _Module, node: ast.Call, name: str, position: int | None, default: Any
    ) -> list[Any]:
        """The values of one argument of a call (by keyword or position), or ``[default]``."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise _Unknown("arguments unpacked at run time (*args, **kwargs)")
        for keyword in node.keywords:
            if keyword.arg == name:
                return self._values_or_raise(module, keyword.value)
        if position is not None and position < len(node.args):
            return self._values_or_raise(module, node.args[position])
        return [default]

    def _has_argument(self, node: ast.Call, name: str, position: int | None) -> bool:
        return any(k.arg == name for k in node.keywords) or (
            position is not None and position < len(node.args)
        )

    def evaluate(self, module: _Module, node: ast.AST) -> list[Any]:
        """The values ``node`` may have (at most :data:`MAX_ALTERNATIVES`); raises
        :class:`_Unknown` when they cannot be computed."""
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                raise _Unknown("too deep")
            values = _evaluate(self, module, node)
        finally:
            self.depth -= 1
        if len(values) > MAX_ALTERNATIVES:
            raise _Unknown("too many possible values")
        return values

    def name(self, module: _Module, name: str) -> list[Any]:
        """The values ``name`` may have in ``module`` (every binding of it counted)."""
        key = (id(module), name)
        if self._volatile:
            return self._name(module, name, key)
        cached = self._names.get(key)
        if cached is None:
            try:
                cached = self._name(module, name, key)
            except _Unknown as exc:
                cached = exc
            self._names[key] = cached
        if isinstance(cached, _Unknown):
            raise cached
        return cached

    def _name(self, module: _Module, name: str, key: tuple[int, str]) -> list[Any]:
        if key in self._evaluating:
            raise _Unknown(f"{name} depends on itself")
        bindings = module.bindings.get(name)
        if not bindings:
            return self._unbound(module, name)
        if name in module.mutated or (
            name in module.handed and self._changed_by_calls(module, name)
        ):
            raise _Unknown(f"{name} is changed in place")
        self._evaluating.add(key)
        try:
            values: list[Any] = []
            for binding in bindings:
                for value in self._binding(module, name, binding):
                    if value not in values:
                        values.append(value)
                if len(values) > MAX_ALTERNATIVES:
                    raise _Unknown("too many possible values")
            return values
        finally:
            self._evaluating.discard(key)

    def _changed_by_calls(self, module: _Module, name: str) -> bool:
        """Whether a call ``name`` (a list or mapping) is handed to may change it: any call but
        the checked ones (which only read their arguments) and plain reading functions."""
        calls = module.handed.pop(name)
        self._evaluating.add((id(module), name))
        try:
            for call in calls:
                funcs = self._values(module, call.func)
                if funcs is None or not all(_reads_only(f) for f in funcs):
                    module.mutated.add(name)
                    return True
        finally:
            self._evaluating.discard((id(module), name))
        return False

    def _unbound(self, module: _Module, name: str) -> list[Any]:
        if name == "__file__":
            return [module.path]
        if name == "__name__":
            return ["__main__" if module.name == "__main__" else module.name]
        for star in module.star_imports:
            ref = _MODULE_ALIASES.get(f"{star}.{name}", f"{star}.{name}")
            if ref in _SINKS or ref in _HANDLERS or ref in _PURE:
                return [_Ref(ref)]
        if name in _BUILTIN_NAMES:
            return [_Ref(f"builtins.{name}")]
        raise _Unknown(f"{name} is not known")

    def _binding(self, module: _Module, name: str, binding: _Binding) -> list[Any]:
        kind = binding.kind
        if kind == "expr":
            return self.evaluate(module, binding.node)
        if kind == "import":
            qualified, local = binding.node, binding.extra
            if local is not None:
                dotted, level, attr = local
                loaded = self.local_module(module, dotted, level) if dotted or level else None
                if loaded is not None:
                    return [_Local(loaded)] if attr is None else self._export(loaded, attr)
                if level:
                    raise _Unknown(f"{name} comes from a relative import")
            return [_Ref(_MODULE_ALIASES.get(qualified, qualified))]
        if kind == "iter":
            items = []
            for container in self.evaluate(module, binding.node):
                items.extend(_items(container))
            out = []
            for item in items:
                out.extend(_unpack(item, binding.extra))
            return out
        if kind == "unpack":
            out = []
            for container in self.evaluate(module, binding.node):
                out.extend(_unpack(container, binding.extra))
            return out
        if kind == "param":
            return self._parameter(module, binding)
        if kind == "varargs":
            return self._varargs(module, binding)
        if kind == "with":
            entered = [
                v.path for v in self.evaluate(module, binding.node) if isinstance(v, _Temporary)
            ]
            if not entered:
                raise _Unknown(f"{name} is computed at run time")
            return entered
        if kind == "def":
            return [_Ref(f"local.{module.name}.{name}")]
        raise _Unknown(f"{name} is computed at run time")

    def _export(self, loaded: _Module, attr: str) -> list[Any]:
        if attr in loaded.bindings or attr in _BUILTIN_NAMES or loaded.star_imports:
            return self.name(loaded, attr)
        sub = self.local_module(loaded, attr, 1) if loaded.path.endswith("__init__.py") else None
        if sub is not None:
            return [_Local(sub)]
        raise _Unknown(f"{attr} is not known")

    def _parameter(self, module: _Module, binding: _Binding) -> list[Any]:
        """The values a parameter of a local function takes: the arguments of every call of it
        in the file (when it is only ever called directly by name) and its default."""
        function, index, default = binding.node, binding.extra[0], binding.extra[1]
        fname = function.name
        if fname in module.mutated or len(module.bindings.get(fname, [])) != 1:
            raise _Unknown(f"a parameter of {fname}")
        calls = module.functions_calls.get(fname)
        if calls is None:
            raise _Unknown(f"a parameter of {fname}")
        params = binding.extra[2]
        values: list[Any] = []
        for call in calls:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords
            ):
                raise _Unknown(f"a parameter of {fname}")
            argument = None
            if index is not None and index < len(call.args):
                argument = call.args[index]
            for keyword in call.keywords:
                if keyword.arg == params[index if index is not None else 0]:
                    argument = keyword.value
            if argument is None:
                if default is None:
                    raise _Unknown(f"a parameter of {fname}")
                argument = default
            for value in self.evaluate(module, argument):
                if value not in values:
                    values.append(value)
        if not calls and default is not None:
            values = self.evaluate(module, default)
        if not values:
            raise _Unknown(f"a parameter of {fname}")
        return values

    def _varargs(self, module: _Module, binding: _Binding) -> list[Any]:
        """``*args`` of a local function only ever called directly: the tuples of the extra
        positional arguments of every call."""
        function, skip = binding.node, binding.extra
        fname = function.name
        calls = module.functions_calls.get(fname)
        if calls is None or fname in module.mutated or len(module.bindings.get(fname, [])) != 1:
            raise _Unknown(f"the arguments of {fname}")
        values: list[Any] = []
        for call in calls:
            if any(isinstance(a, ast.Starred) for a in call.args):
                raise _Unknown(f"the arguments of {fname}")
            for combination in _product([self.evaluate(module, a) for a in call.args[skip:]]):
                if combination not in values:
                    values.append(combination)
        if not values:
            raise _Unknown(f"the arguments of {fname}")
        return values

    def _chdirs(self, module: _Module) -> list[str]:
        found: list[str] = []
        for node in module.chdir_calls:
            if isinstance(node, ast.Call):
                funcs = self._values(module, node.func) or []
                if any(isinstance(f, _Ref) and f.name in ("os.chdir", "os.fchdir") for f in funcs):
                    values = self._values(module, node.args[0]) if node.args else None
                    texts = [_text(v) for v in values] if values else [None]
                    found.extend(t if t is not None else "$PWD" for t in texts)
        return found

    def cwds(self, chosen: str | None) -> list[str | None]:
        """The folders a relative path of an effect may be read from: the one the call chose,
        else the program's folder and every folder it changes to."""
        if chosen is not None:
            return [chosen]
        return [None, *dict.fromkeys(self.chdirs)]


_INTROSPECTION = frozenset(
    {"builtins.getattr", "builtins.hasattr", "builtins.callable", "builtins.isinstance",
     "builtins.print", "builtins.repr", "builtins.str", "builtins.id", "builtins.type"}
)  # fmt: skip
_CODE_RUNNERS = frozenset(
    {"builtins.exec", "builtins.eval", "builtins.compile", "builtins.__import__",
     "importlib.import_module", "importlib.__import__", "runpy.run_path", "runpy.run_module",
     "builtins.getattr", "builtins.setattr", "builtins.globals", "builtins.locals",
     "builtins.vars"}
)  # fmt: skip
_BUILTIN_NAMES = frozenset(
    {"open", "exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr",
     "globals", "locals", "vars", "str", "bytes", "int", "chr", "ord", "len", "reversed",
     "sorted", "list", "tuple", "hasattr", "callable", "isinstance", "print", "repr", "id",
     "type", "range", "format", "bytearray"}
)  # fmt: skip


# --- indexing a module ----------------------------------------------------------------------------


def _binder(kind: str, node: Any, with_path: bool = True) -> Callable[[tuple[int, ...]], _Binding]:
    """The binding of ``kind`` to ``node`` for each name of an unpacked target; ``with_path``:
    the name's position in the target is the binding's ``extra``."""
    return lambda path: _Binding(kind, node, path if with_path else None)


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
        return [node.target]
    return []


_SKIPPED = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)
_BINDERS = frozenset(
    {ast.Call, ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.AugAssign, ast.For, ast.AsyncFor,
     ast.comprehension, ast.withitem, ast.ExceptHandler, ast.FunctionDef, ast.AsyncFunctionDef,
     ast.Lambda, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal,
     ast.MatchAs, ast.MatchStar, ast.MatchMapping, ast.Delete}
)  # fmt: skip


def _index(module: _Module) -> None:
    """Record every binding of every name (all scopes together), the parent of every node,
    names changed in place, and the direct calls of each local function."""
    bindings = module.bindings
    parents = module.parents
    calls: dict[str, list[ast.Call]] = {}
    referenced: set[str] = set()
    changed: set[str] = set()

    def bind(name: str, binding: _Binding) -> None:
        bindings.setdefault(name, []).append(binding)

    def bind_target(target: ast.AST, binding_of: Callable[[tuple[int, ...]], _Binding],
                    path: tuple[int, ...] = ()) -> None:  # fmt: skip
        if isinstance(target, ast.Name):
            bind(target.id, binding_of(path))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    bind_target(element.value, lambda _p: _Binding("unknown"))
                else:
                    bind_target(element, binding_of, (*path, i))
        elif isinstance(target, ast.Starred):
            bind_target(target.value, lambda _p: _Binding("unknown"))
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            base = target.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name) and isinstance(target, ast.Subscript):
                changed.add(base.id)

    nodes = module.nodes
    todo: deque[ast.AST] = deque([module.tree])
    while todo:  # every node, in the order ast.walk gives, with its parent
        node = todo.popleft()
        nodes.append(node)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, _SKIPPED):
                parents[id(child)] = node
                todo.append(child)
    for node in nodes:
        if type(node) not in _BINDERS:
            continue
        if isinstance(node, ast.Call):
            func = node.func
            if getattr(func, "attr", getattr(func, "id", "")) in ("chdir", "fchdir"):
                module.chdir_calls.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            if value is None:
                continue
            for target in _targets(node):
                if isinstance(target, ast.Name):
                    bind(target.id, _Binding("expr", value))
                else:
                    bind_target(target, _binder("unpack", value))
        elif isinstance(node, ast.NamedExpr):
            bind(node.target.id, _Binding("expr", node.value))
        elif isinstance(node, ast.AugAssign):
            bind_target(node.target, lambda _p: _Binding("unknown"))
            if isinstance(node.target, ast.Name):
                changed.add(node.target.id)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bind_target(node.target, _binder("iter", node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bind_target(node.optional_vars, _binder("with", node.context_expr, with_path=False))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bind(node.name, _Binding("unknown"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bind(node.name, _Binding("def", node))
            module.functions[node.name] = node
            arguments = node.args
            positional = [*arguments.posonlyargs, *arguments.args]
            defaults = [None] * (len(positional) - len(arguments.defaults)) + list(
                arguments.defaults
            )
            names = [a.arg for a in positional]
            for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
                bind(arg.arg, _Binding("param", node, (i, default, names)))
            for arg, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
                bind(arg.arg, _Binding("unknown") if kw_default is None else
                     _Binding("param", node, (None, kw_default, [arg.arg])))  # fmt: skip
            if arguments.vararg is not None:
                bind(arguments.vararg.arg, _Binding("varargs", node, len(positional)))
            if arguments.kwarg is not None:
                bind(arguments.kwarg.arg, _Binding("unknown"))
        elif isinstance(node, ast.Lambda):
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                bind(arg.arg, _Binding("unknown"))
            for extra in (node.args.vararg, node.args.kwarg):
                if extra is not None:
                    bind(extra.arg, _Binding("unknown"))
        elif isinstance(node, ast.ClassDef):
            bind(node.name, _Binding("unknown"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bind(alias.asname, _Binding("import", alias.name, (alias.name, 0, None)))
                else:
                    top = alias.name.split(".")[0]
                    bind(top, _Binding("import", top, (top, 0, None)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            for alias in node.names:
                if alias.name == "*":
                    if node.level:
                        module.star_imports.append("$local")
                    else:
                        module.star_imports.append(_MODULE_ALIASES.get(base, base))
                    continue
                qualified = f"{base}.{alias.name}" if base else alias.name
                bind(alias.asname or alias.name,
                     _Binding("import", qualified, (base, node.level, alias.name)))  # fmt: skip
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            pass
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bind(node.name, _Binding("unknown"))
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bind(node.rest, _Binding("unknown"))
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bind(target.id, _Binding("unknown"))
    mutable = _escaping_names(module)
    for node in nodes:
        if isinstance(node, ast.Delete):
            for target in node.targets:
                deleted = target
                while isinstance(deleted, (ast.Subscript, ast.Attribute)):
                    deleted = deleted.value
                if isinstance(deleted, ast.Name):
                    changed.add(deleted.id)
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            calls.setdefault(node.id, []).append(parent)
            continue
        referenced.add(node.id)
        if node.id not in mutable:
            continue
        if isinstance(parent, ast.Attribute):
            call = parents.get(id(parent))
            if not (isinstance(call, ast.Call) and call.func is parent
                    and parent.attr in ("copy", "index", "count", "keys", "values", "items",
                                        "get")):  # fmt: skip
                changed.add(node.id)  # a method that may change it, or one handed around
        elif isinstance(parent, (ast.Call, ast.keyword)):
            call = parent if isinstance(parent, ast.Call) else parents.get(id(parent))
            if isinstance(call, ast.Call):
                module.handed.setdefault(node.id, []).append(call)
        elif not isinstance(parent, (ast.Subscript, ast.For, ast.comprehension, ast.Compare,
                                     ast.FormattedValue, ast.Expr, ast.If, ast.BoolOp,
                                     ast.UnaryOp, ast.Starred)):  # fmt: skip
            changed.add(node.id)  # aliased, returned, stored elsewhere: it may change
    module.mutated |= changed & mutable
    module.functions_calls = {
        name: calls.get(name, []) for name in module.functions if name not in referenced
    }
    if "$local" in module.star_imports:
        module.star_imports.remove("$local")


def _escaping_names(module: _Module) -> set[str]:
    """Names bound to list, dict or set displays (which a function they are handed to may
    change)."""
    if module.mutable_names is not None:
        return module.mutable_names
    names = {
        name
        for name, bindings in module.bindings.items()
        if any(
            b.kind == "expr"
            and isinstance(b.node, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp))
            for b in bindings
        )  # fmt: skip
    }
    module.mutable_names = names
    return names


# --- the evaluator ------------------------------------------------------------------------------


_READERS = frozenset(
    {"builtins.print", "builtins.len", "builtins.sorted", "builtins.list", "builtins.tuple",
     "builtins.set", "builtins.str", "builtins.repr", "builtins.enumerate", "builtins.any",
     "builtins.all", "builtins.sum", "builtins.min", "builtins.max", "builtins.zip",
     "builtins.isinstance", "builtins.dict", "json.dumps", "json.dump", "shlex.join",
     "logging.info", "logging.debug", "logging.warning", "logging.error"}
)  # fmt: skip


def _reads_only(func: Any) -> bool:
    """Whether calling ``func`` leaves the lists and mappings it is given as they were."""
    if isinstance(func, _Method):
        return isinstance(func.receiver, (str, bytes, _Path))
    if isinstance(func, _Ref):
        name = _MODULE_ALIASES.get(func.name, func.name)
        return name in _HANDLERS or name in _PURE or name in _READERS
    return False


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, _Path):
        return value.path
    return None


def _items(container: Any) -> list[Any]:
    if isinstance(container, (list, tuple, set, frozenset)):
        return list(container)
    if isinstance(container, dict):
        return list(container)
    if isinstance(container, str):
        return list(container) if len(container) <= 256 else [container]
    if isinstance(container, range) and len(container) <= 256:
        return list(container)
    if isinstance(container, _Glob):
        return [container.item]
    raise _Unknown("iterating over a value computed at run time")


def _unpack(value: Any, path: tuple[int, ...]) -> list[Any]:
    for index in path:
        if isinstance(value, _Glob):
            return [value.part(index)]
        if not isinstance(value, (list, tuple)) or index >= len(value):
            raise _Unknown("unpacking a value computed at run time")
        value = value[index]
    return [value]


@dataclass(frozen=True)
class _Glob:
    """The items of a folder listing: each one a glob pattern below the folder."""

    item: Any
    parts: tuple[Any, ...] = ()

    def part(self, index: int) -> Any:
        if index < len(self.parts):
            return self.parts[index]
        raise _Unknown("unpacking a listing")


def _join(base: str, *parts: str) -> str:
    path = base
    for part in parts:
        path = part if part.startswith("/") else posixpath.join(path, part) if path else part
    return path


def _expanduser(path: str) -> str:
    if path == "~" or path.startswith("~/"):
        return _HOME + path[1:]
    return path


def _mode(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return format(value, "o").zfill(3)
    raise _Unknown("a computed file mode")


def _product(lists: Sequence[list[Any]]) -> Iterator[tuple[Any, ...]]:
    total = 1
    for values in lists:
        total *= max(1, len(values))
        if total > MAX_ALTERNATIVES:
            raise _Unknown("too many possible values")
    if not lists:
        yield ()
        return
    head, *rest = lists
    for value in head:
        for tail in _product(rest):
            yield (value, *tail)


def _check_size(value: Any) -> Any:
    if isinstance(value, (str, bytes)) and len(value) > _MAX_STRING:
        raise _Unknown("a string longer than the checker folds")
    if isinstance(value, (list, tuple)) and len(value) > 4096:
        raise _Unknown("a list longer than the checker folds")
    return value


def _evaluate(reader: _Reader, module: _Module, node: ast.AST) -> list[Any]:
    ev = reader.evaluate
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, ast.Name):
        return reader.name(module, node.id)
    if isinstance(node, ast.JoinedStr):
        pieces = [ev(module, v) for v in node.values]
        return [_check_size("".join(p)) for p in _product(pieces)]
    if isinstance(node, ast.FormattedValue):
        values = ev(module, node.value)
        spec = [""] if node.format_spec is None else ev(module, node.format_spec)
        out: list[Any] = []
        for value, fmt in _product([values, spec]):
            if not isinstance(value, (str, int, float, bytes)) and not isinstance(value, _Path):
                raise _Unknown("formatting a value computed at run time")
            value = _text(value) if isinstance(value, _Path) else value
            if node.conversion == ord("r"):
                value = repr(value)
            elif node.conversion in (ord("s"), ord("a")):
                value = str(value)
            out.append(format(value, fmt))
        return out
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        pieces = []
        for element in node.elts:
            if isinstance(element, ast.Starred):
                pieces.append([tuple(_items(v)) for v in ev(module, element.value)])
            else:
                pieces.append([(v,) for v in ev(module, element)])
        out = []
        for combination in _product(pieces):
            flat = [item for part in combination for item in part]
            out.append(_check_size(tuple(flat) if isinstance(node, ast.Tuple) else flat))
        return out
    if isinstance(node, ast.Dict):
        if len(node.keys) > 64:
            raise _Unknown("a large mapping")
        keys = [ev(module, k) if k is not None else [None] for k in node.keys]
        values = [ev(module, v) for v in node.values]
        out = []
        for combination in _product(keys + values):
            half = len(keys)
            mapping: dict[Any, Any] = {}
            for key, value in zip(combination[:half], combination[half:], strict=True):
                if key is None:
                    raise _Unknown("a mapping unpacked at run time")
                mapping[key] = value
            out.append(mapping)
        return out
    if isinstance(node, ast.BinOp):
        return _binop(reader, module, node)
    if isinstance(node, ast.IfExp):
        return ev(module, node.body) + ev(module, node.orelse)
    if isinstance(node, ast.BoolOp):
        out = []
        for value in node.values:
            out.extend(ev(module, value))
        return out
    if isinstance(node, ast.Subscript):
        return _subscript(reader, module, node)
    if isinstance(node, ast.Attribute):
        return _attribute(reader, module, node)
    if isinstance(node, ast.Call):
        return _call_value(reader, module, node)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
        return _comprehension(reader, module, node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return [-v for v in ev(module, node.operand) if isinstance(v, (int, float))]
    if isinstance(node, ast.NamedExpr):
        return ev(module, node.value)
    raise _Unknown("a value computed at run time")


def _binop(reader: _Reader, module: _Module, node: ast.BinOp) -> list[Any]:
    left = reader.evaluate(module, node.left)
    right = reader.evaluate(module, node.right)
    out: list[Any] = []
    for a, b in _product([left, right]):
        if isinstance(node.op, ast.Div) and isinstance(a, _Path):
            tail = _text(b)
            if tail is None:
                raise _Unknown("a path joined with a computed part")
            out.append(_Path(_join(a.path, tail)))
        elif isinstance(node.op, ast.Div) and isinstance(b, _Path) and isinstance(a, str):
            out.append(_Path(_join(a, b.path)))
        elif isinstance(node.op, ast.Add) and (
            isinstance(a, (str, bytes, list, tuple, int, float)) and type(a) is type(b)
        ):
            out.append(_check_size(operator.add(a, b)))  # a and b: one type
        elif isinstance(node.op, ast.Mod) and isinstance(a, (str, bytes)):
            if isinstance(b, (list, dict)) or isinstance(b, _Path):
                raise _Unknown("formatting a computed value")
            out.append(_check_size(a % b))
        elif isinstance(node.op, ast.Mult) and isinstance(a, (str, list)) and isinstance(b, int):
            if len(a) * b > _MAX_STRING:
                raise _Unknown("a string longer than the checker folds")
            out.append(a * b)
        elif isinstance(node.op, (ast.BitOr, ast.Add, ast.Sub, ast.Mult, ast.BitAnd)) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in (a, b)
        ):
            op = {ast.BitOr: int.__or__, ast.Add: int.__add__, ast.Sub: int.__sub__,
                  ast.Mult: int.__mul__, ast.BitAnd: int.__and__}[type(node.op)]  # fmt: skip
            if abs(a) > 2**40 or abs(b) > 2**40:
                raise _Unknown("a large number")
            out.append(op(a, b))
        else:
            raise _Unknown("a value computed at run time")
    return out


def _subscript(reader: _Reader, module: _Module, node: ast.Subscript) -> list[Any]:
    bases = reader.evaluate(module, node.value)
    if any(isinstance(b, _Ref) and b.name == "os.environ" for b in bases):
        keys = reader.evaluate(module, node.slice)
        if keys == ["HOME"]:
            return [_HOME]
        raise _Unknown("an environment variable")
    if isinstance(node.slice, ast.Slice):
        parts = [
            reader.evaluate(module, p) if p is not None else [None]
            for p in (node.slice.lower, node.slice.upper, node.slice.step)
        ]
        out: list[Any] = []
        for base, lower, upper, step in _product([bases, *parts]):
            if not isinstance(base, (str, bytes, list, tuple)):
                raise _Unknown("a slice of a computed value")
            out.append(base[slice(lower, upper, step)])
        return out
    keys = reader.evaluate(module, node.slice)
    out = []
    for base, key in _product([bases, keys]):
        if isinstance(base, (str, bytes, list, tuple)) and isinstance(key, int):
            try:
                out.append(base[key])
            except IndexError:
                raise _Unknown("an index past the end") from None
        elif isinstance(base, dict) and key in base:
            out.append(base[key])
        elif isinstance(base, _Glob):
            out.append(base.part(key) if isinstance(key, int) else base.item)
        else:
            raise _Unknown("an item of a computed value")
    return out


_CONSTANTS: dict[str, Any] = {
    "sys.executable": "python3",
    "os.sep": "/",
    "os.path.sep": "/",
    "os.curdir": ".",
    "os.pardir": "..",
    "os.devnull": "/dev/null",
    "subprocess.PIPE": -1,
    "subprocess.DEVNULL": -3,
    "subprocess.STDOUT": -2,
}
for _flag in dir(os):
    if _flag.startswith(("O_", "P_", "SIG")) and isinstance(getattr(os, _flag), int):
        _CONSTANTS[f"os.{_flag}"] = int(getattr(os, _flag))
for _mode_name in ("S_IRWXU", "S_IRUSR", "S_IWUSR", "S_IXUSR", "S_IRWXG", "S_IRGRP", "S_IWGRP",
                   "S_IXGRP", "S_IRWXO", "S_IROTH", "S_IWOTH", "S_IXOTH", "S_ISUID", "S_ISGID",
                   "S_ISVTX"):  # fmt: skip
    import stat as _stat

    _CONSTANTS[f"stat.{_mode_name}"] = int(getattr(_stat, _mode_name))
    _CONSTANTS[f"os.{_mode_name}"] = int(getattr(_stat, _mode_name))
for _signal in ("SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGSTOP", "SIGUSR1"):
    import signal as _signals

    _CONSTANTS[f"signal.{_signal}"] = int(getattr(_signals, _signal))


def _attribute(reader: _Reader, module: _Module, node: ast.Attribute) -> list[Any]:
    out: list[Any] = []
    for base in reader.evaluate(module, node.value):
        if isinstance(base, _Ref):
            name = f"{base.name}.{node.attr}"
            if name == "sys.argv":
                out.append(list(reader.sys_argv))
            elif name == "sys.path":
                out.append(reader.sys_path_marker)
            elif name in _CONSTANTS:
                out.append(_CONSTANTS[name])
            elif name in ("signal.Signals.SIGKILL",):
                out.append(9)
            else:
                out.append(_Ref(_MODULE_ALIASES.get(name, name)))
        elif isinstance(base, _Local):
            out.extend(reader._export(base.module, node.attr))
        elif isinstance(base, _Path):
            path = base.path.rstrip("/") or base.path
            if node.attr == "parent":
                out.append(_Path(posixpath.dirname(path) or "."))
            elif node.attr in ("name", "stem", "suffix"):
                name = posixpath.basename(path)
                stem, suffix = posixpath.splitext(name)
                out.append({"name": name, "stem": stem, "suffix": suffix}[node.attr])
            elif node.attr in _PATH_METHODS:
                out.append(_Method(base, node.attr))
            else:
                raise _Unknown(f"{node.attr} of a path")
        elif isinstance(base, (str, bytes)) and node.attr in _STR_METHODS:
            out.append(_Method(base, node.attr))
        else:
            raise _Unknown(f"{node.attr} of a computed value")
    return out


@dataclass(frozen=True)
class _Method:
    """A method of a known value, not yet called."""

    receiver: Any
    name: str


_PATH_METHODS = frozenset(
    {"joinpath", "with_name", "with_suffix", "with_stem", "expanduser", "resolve", "absolute",
     "as_posix", "unlink", "rmdir", "write_text", "write_bytes", "touch", "open", "rename",
     "replace", "symlink_to", "hardlink_to", "chmod", "lchmod", "mkdir", "glob", "rglob",
     "iterdir", "read_text", "read_bytes", "exists", "is_dir", "is_file", "rmtree", "walk"}
)  # fmt: skip


def _call_value(reader: _Reader, module: _Module, node: ast.Call) -> list[Any]:
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords
    ):
        raise _Unknown("arguments unpacked at run time")
    out: list[Any] = []
    for func in reader.evaluate(module, node.func):
        if isinstance(func, _Method):
            out.extend(_method_value(reader, module, node, func))
            continue
        if not isinstance(func, _Ref):
            raise _Unknown("the result of a computed call")
        name = func.name
        if name in ("builtins.__import__", "importlib.import_module") and node.args:
            for target in reader._strings(module, node.args[0]):
                local = reader.local_module(module, target)
                out.append(_Local(local) if local is not None else
                           _Ref(_MODULE_ALIASES.get(target, target)))  # fmt: skip
            continue
        if name == "builtins.getattr" and len(node.args) >= 2:
            attrs = reader._strings(module, node.args[1])
            for attr in attrs:
                fake = ast.Attribute(value=node.args[0], attr=attr, ctx=ast.Load())
                out.extend(_attribute(reader, module, fake))
            continue
        pure = _PURE.get(name)
        if pure is None:
            raise _Unknown(f"the result of {name}()")
        args = [reader.evaluate(module, a) for a in node.args]
        keywords = {k.arg: reader.evaluate(module, k.value) for k in node.keywords if k.arg}
        names = list(keywords)
        for combination in _product(args + [keywords[k] for k in names]):
            positional = combination[: len(args)]
            named = dict(zip(names, combination[len(args) :], strict=True))
            try:
                out.append(_check_size(pure(*positional, **named)))
            except _Unknown:
                raise
            except Exception:  # a fold that fails (a bad argument): the value is unknown
                raise _Unknown(f"the result of {name}()") from None
    return out


def _method_value(reader: _Reader, module: _Module, node: ast.Call, method: _Method) -> list[Any]:
    args = [reader.evaluate(module, a) for a in node.args]
    keywords = {k.arg: reader.evaluate(module, k.value) for k in node.keywords if k.arg}
    names = list(keywords)
    receiver, name = method.receiver, method.name
    out: list[Any] = []
    for combination in _product(args + [keywords[k] for k in names]):
        positional = list(combination[: len(args)])
        named = dict(zip(names, combination[len(args) :], strict=True))
        if isinstance(receiver, _Path):
            out.append(_path_value(receiver, name, positional))
            continue
        if name == "format":
            _safe_format(receiver)
        if name == "join":
            if not positional:
                raise _Unknown("join")
            items = _items(positional[0])
            if not all(isinstance(i, type(receiver)) for i in items):
                raise _Unknown("joining computed values")
            positional[0] = items
        if any(isinstance(v, (_Ref, _Path, _Method, _Glob, _Local)) for v in positional):
            raise _Unknown("a computed argument")
        try:
            out.append(_check_size(getattr(receiver, name)(*positional, **named)))
        except Exception:  # the fold fails: unknown
            raise _Unknown(f"{name}()") from None
    return out


def _safe_format(template: Any) -> None:
    """``str.format`` only with plain fields (no attribute or item lookups)."""
    if not isinstance(template, str):
        raise _Unknown("format")
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        raise _Unknown("format") from None
    for _text_part, field_name, spec, _conversion in fields:
        if field_name and ("." in field_name or "[" in field_name):
            raise _Unknown("format with lookups")
        if spec and "{" in spec:
            raise _Unknown("format with nested fields")


def _path_value(path: _Path, name: str, args: list[Any]) -> Any:
    if name == "joinpath":
        parts = [_text(a) for a in args]
        if any(p is None for p in parts):
            raise _Unknown("a path joined with a computed part")
        return _Path(_join(path.path, *[p for p in parts if p is not None]))
    if name in ("with_name", "with_suffix", "with_stem") and args and isinstance(args[0], str):
        head, tail = posixpath.split(path.path)
        stem, suffix = posixpath.splitext(tail)
        new = {"with_name": args[0], "with_suffix": stem + args[0],
               "with_stem": args[0] + suffix}[name]  # fmt: skip
        return _Path(posixpath.join(head, new) if head else new)
    if name == "expanduser":
        return _Path(_expanduser(path.path))
    if name in ("resolve", "absolute"):
        return path
    if name == "as_posix":
        return path.path
    if name in ("glob", "rglob") and args and isinstance(args[0], str):
        pattern = args[0] if name == "glob" else "**/" + args[0]
        return _Glob(_Path(_join(path.path, pattern)))
    if name == "iterdir":
        return _Glob(_Path(_join(path.path, "*")))
    if name == "walk":
        return _Glob((_Path(_join(path.path, "**")), ["*"], ["*"]),
                     (_Path(_join(path.path, "**")), ["*"], ["*"]))  # fmt: skip
    raise _Unknown(f"the result of {name}()")


def _comprehension(reader: _Reader, module: _Module, node: Any) -> list[Any]:
    if len(node.generators) != 1 or node.generators[0].ifs:
        raise _Unknown("a comprehension")
    generator = node.generators[0]
    if not isinstance(generator.target, ast.Name):
        raise _Unknown("a comprehension")
    name = generator.target.id
    if len(module.bindings.get(name, [])) != 1:
        raise _Unknown("a comprehension")
    results = []
    for container in reader.evaluate(module, generator.iter):
        items = _items(container)
        if len(items) > 4096:
            raise _Unknown("a long comprehension")
        element_values: list[Any] = []
        for item in items:
            saved = module.bindings[name]
            module.bindings[name] = (
                [_Binding("expr", ast.Constant(item))]
                if isinstance(item, (str, int, bytes, float))
                else saved
            )
            if module.bindings[name] is saved:
                raise _Unknown("a comprehension over computed values")
            reader._volatile += 1
            try:
                values = reader.evaluate(module, node.elt)
            finally:
                reader._volatile -= 1
                module.bindings[name] = saved
            if len(values) != 1:
                raise _Unknown("a comprehension")
            element_values.append(values[0])
        results.append(element_values)
    return results


@dataclass(frozen=True)
class _Temporary:
    """A temporary folder object (``with tempfile.TemporaryDirectory() as d``: ``d``)."""

    path: str


def _pure_join(*parts: Any) -> Any:
    texts = [_text(p) for p in parts]
    if any(t is None for t in texts):
        raise _Unknown("a path joined with a computed part")
    return _join(*[t for t in texts if t is not None])


def _pure_path(*parts: Any) -> _Path:
    texts = [_text(p) for p in parts] or ["."]
    if any(t is None for t in texts):
        raise _Unknown("a path of a computed value")
    return _Path(_join(*[t for t in texts if t is not None]))


def _listing(folder: Any = ".") -> _Glob:
    text = _text(folder)
    if text is None:
        raise _Unknown("listing a computed folder")
    return _Glob("*")


def _glob(pattern: Any, **_kwargs: Any) -> _Glob:
    text = _text(pattern)
    if text is None:
        raise _Unknown("a computed pattern")
    return _Glob(text)


def _walk(top: Any, *_args: Any, **_kwargs: Any) -> _Glob:
    text = _text(top)
    if text is None:
        raise _Unknown("walking a computed folder")
    below = _join(text, "**")
    return _Glob((below, ["*"], ["*"]), (below, ["*"], ["*"]))


def _b64(data: Any, *_args: Any, **_kwargs: Any) -> bytes:
    if isinstance(data, str):
        data = data.encode()
    return base64.b64decode(data)


def _codecs_decode(data: Any, encoding: str = "utf-8", *_args: Any) -> Any:
    if encoding.replace("-", "_").lower() in ("rot13", "rot_13"):
        return codecs.decode(data, "rot13")
    if encoding in ("hex", "base64", "hex_codec", "base64_codec") and isinstance(data, bytes):
        return codecs.decode(data, encoding)
    return data.decode(encoding) if isinstance(data, bytes) else data


def _str(value: Any = "") -> str:
    if isinstance(value, _Path):
        return value.path
    if isinstance(value, (str, int, float, bool)) or value is None:
        return str(value)
    raise _Unknown("str() of a computed value")


def _getenv(name: Any, default: Any = None) -> Any:
    if name == "HOME":
        return _HOME
    raise _Unknown("an environment variable")


_PURE: dict[str, Callable[..., Any]] = {
    "os.path.join": _pure_join,
    "os.path.expanduser": lambda p: _expanduser(_text(p) or ""),
    "os.path.abspath": lambda p: posixpath.normpath(_text(p) or "."),
    "os.path.realpath": lambda p, **_k: posixpath.normpath(_text(p) or "."),
    "os.path.normpath": lambda p: posixpath.normpath(_text(p) or "."),
    "os.path.dirname": lambda p: posixpath.dirname(_text(p) or "") or ".",
    "os.path.basename": lambda p: posixpath.basename(_text(p) or ""),
    "os.path.expandvars": lambda p: _expanduser(p.replace("$HOME", "~").replace("${HOME}", "~")),
    "os.fspath": lambda p: _text(p),
    "os.getcwd": lambda: ".",
    "os.getenv": _getenv,
    "os.environ.get": _getenv,
    "os.listdir": _listing,
    "os.scandir": _listing,
    "os.walk": _walk,
    "glob.glob": _glob,
    "glob.iglob": _glob,
    "pathlib.Path": _pure_path,
    "pathlib.Path.home": lambda: _Path(_HOME),
    "pathlib.Path.cwd": lambda: _Path("."),
    "tempfile.gettempdir": lambda: "/tmp",
    "tempfile.mkdtemp": lambda *a, **k: "/tmp/tmp.folder",
    "tempfile.TemporaryDirectory": lambda *a, **k: _Temporary("/tmp/tmp.folder"),
    "shlex.split": lambda s, *a, **k: shlex.split(s),
    "shlex.quote": shlex.quote,
    "shlex.join": lambda parts: shlex.join([_text(p) or "" for p in parts]),
    "base64.b64decode": _b64,
    "base64.standard_b64decode": _b64,
    "base64.urlsafe_b64decode": lambda d: base64.urlsafe_b64decode(d),
    "base64.b32decode": lambda d: base64.b32decode(d),
    "base64.b16decode": lambda d: base64.b16decode(d),
    "binascii.unhexlify": lambda d: binascii.unhexlify(d),
    "binascii.a2b_hex": lambda d: binascii.unhexlify(d),
    "binascii.a2b_base64": lambda d: binascii.a2b_base64(d),
    "bytes.fromhex": lambda d: bytes.fromhex(d),
    "codecs.decode": _codecs_decode,
    "builtins.str": _str,
    "builtins.bytes": lambda v=b"", *a: bytes(v, *a) if isinstance(v, str) else bytes(v),
    "builtins.int": lambda v=0, *a: int(v, *a),
    "builtins.chr": chr,
    "builtins.ord": ord,
    "builtins.len": len,
    "builtins.reversed": lambda v: list(reversed(_items(v))),
    "builtins.sorted": lambda v: sorted(_items(v)),
    "builtins.list": lambda v=(): list(_items(v)),
    "builtins.tuple": lambda v=(): tuple(_items(v)),
    "builtins.range": lambda *a: range(*a),
    "builtins.format": format,
    "builtins.bytearray": lambda v=b"", *a: bytes(v, *a) if isinstance(v, str) else bytes(v),
}


def _is_constant_text(reader: _Reader, module: _Module, node: ast.AST) -> bool:
    values = reader._values(module, node)
    return values is not None and all(_text(v) is not None for v in values)


def _safe_loader(node: ast.Call) -> bool:
    """``yaml.load(…, Loader=yaml.SafeLoader)`` and similar safe forms."""
    for keyword in node.keywords:
        if keyword.arg == "Loader":
            loader = keyword.value
            name = loader.attr if isinstance(loader, ast.Attribute) else getattr(loader, "id", "")
            return name in ("SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader")
    return False


def _segment(module: _Module, node: ast.AST) -> str:
    text = ast.unparse(node) if isinstance(node, ast.expr) else type(node).__name__.lower()
    text = " ".join(text.split())
    return text if len(text) <= 120 else text[:117] + "..."


def _where(module: _Module, node: ast.AST) -> str:
    path = module.path.removeprefix("./") if module.path.startswith("./<") else module.path
    return f"{path}:{getattr(node, 'lineno', 0)}"


# --- the handlers of the sinks --------------------------------------------------------------------

_Handler = Callable[[_Reader, _Module, ast.Call], None]


def _shell(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if not node.args and not node.keywords:
        return
    argument = node.args[0] if node.args else node.keywords[0].value
    for text in reader._strings(module, argument):
        for cwd in reader.cwds(None):
            reader.add(Effect("shell", text=text, cwd=cwd, where=_where(module, node)))


def _subprocess(reader: _Reader, module: _Module, node: ast.Call) -> None:
    where = _where(module, node)
    shells = reader._keyword(module, node, "shell", 8, False)
    executables = reader._keyword(module, node, "executable", 2, None)
    cwds = reader._values(module, _argument(node, "cwd", 9)) or ["$PWD"]
    inputs = reader._keyword(module, node, "input", None, None)
    stdins = reader._keyword(module, node, "stdin", 3, None)
    if not node.args and not any(k.arg == "args" for k in node.keywords):
        return
    argument = node.args[0] if node.args else next(k.value for k in node.keywords
                                                   if k.arg == "args")  # fmt: skip
    for argv, shell, executable, cwd, given in _product(
        [reader._argvs(module, argument), shells, executables, cwds, inputs]
    ):
        if cwd is not None and _text(cwd) is None:
            cwd = "$PWD"  # computed: relative paths there lead anywhere
        if executable is not None and _text(executable) is None:
            raise _Unknown("a computed program (executable=)")
        stdin_text = _text(given) if given is not None else None
        if given is not None and stdin_text is None:
            raise _Unknown("computed input (input=)")
        if stdin_text is None and any(s == -1 for s in stdins):
            stdin_text = "\0unknown"  # fed later (communicate, stdin.write): unknown content
        folder = _text(cwd) if cwd is not None else None
        if shell:
            words = [_text(executable) or "sh", "-c", argv[0], *argv[1:]] if executable else None
            for where_cwd in reader.cwds(folder):
                if words:
                    reader.argv(words, where, cwd=where_cwd, stdin=stdin_text)
                else:
                    reader.add(Effect("shell", text=argv[0], stdin=stdin_text, cwd=where_cwd,
                                      where=where))  # fmt: skip
            continue
        if executable:
            argv = [_text(executable) or argv[0], *argv[1:]]
        for where_cwd in reader.cwds(folder):
            reader.argv(argv, where, cwd=where_cwd, stdin=stdin_text)


def _argument(node: ast.Call, name: str, position: int) -> ast.expr:
    """The expression given for one argument of a call (``None`` when it is not given)."""
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    if position < len(node.args):
        return node.args[position]
    return ast.Constant(None)


def _exec(reader: _Reader, module: _Module, node: ast.Call) -> None:
    """``os.execv(path, argv)``, ``os.execl(path, arg0, arg1, …)`` and the spawn forms."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    args = list(node.args)
    if any(isinstance(a, ast.Starred) for a in args):
        raise _Unknown("arguments unpacked at run time")
    if name.startswith("spawn"):
        args = args[1:]  # the mode
    if not args:
        return
    programs = reader._strings(module, args[0])
    rest = args[1:]
    if "e" in name.removeprefix("spawn").removeprefix("exec") and rest:
        rest = rest[:-1]  # the environment
    if "v" in name.removeprefix("spawn").removeprefix("exec"):
        argvs = reader._argvs(module, rest[0]) if rest else [[]]
    else:
        argvs = [list(p) for p in _product([reader._strings(module, a) for a in rest])]
    for program, argv in _product([programs, argvs]):
        reader.argv([program, *argv[1:]], _where(module, node))


def _posix_spawn(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if len(node.args) < 2:
        raise _Unknown("posix_spawn")
    for program, argv in _product([reader._strings(module, node.args[0]),
                                   reader._argvs(module, node.args[1])]):  # fmt: skip
        reader.argv([program, *argv[1:]], _where(module, node))


def _pty_spawn(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if node.args:
        for argv in reader._argvs(module, node.args[0]):
            reader.argv(argv, _where(module, node))


def _asyncio_exec(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if any(isinstance(a, ast.Starred) for a in node.args):
        raise _Unknown("arguments unpacked at run time")
    words = [reader._strings(module, a) for a in node.args]
    cwds = reader._keyword(module, node, "cwd", None, None)
    for argv, cwd in _product([[list(w) for w in _product(words)], cwds]):
        reader.argv(argv, _where(module, node), cwd=_text(cwd) if cwd is not None else None)


def _file_op(words: Callable[[list[str]], list[str]], count: int) -> _Handler:
    def handler(reader: _Reader, module: _Module, node: ast.Call) -> None:
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise _Unknown("arguments unpacked at run time")
        names = ("src", "dst") if count == 2 else ("path",)
        args = []
        for i in range(count):
            argument = (
                node.args[i]
                if i < len(node.args)
                else next(
                    (k.value for k in node.keywords if k.arg in (names[i], "path", "dst", "src")),
                    None,
                )
            )
            if argument is None:
                return
            args.append(reader._paths(module, argument))
        for combination in _product(args):
            for cwd in reader.cwds(None):
                reader.argv(words(list(combination)), _where(module, node), cwd=cwd)

    return handler


def _open(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if not node.args and not any(k.arg == "file" for k in node.keywords):
        return
    argument = node.args[0] if node.args else next(k.value for k in node.keywords
                                                   if k.arg == "file")  # fmt: skip
    modes = reader._keyword(module, node, "mode", 1, "r")
    if all(isinstance(m, str) and not any(c in m for c in "wax+") for m in modes):
        return  # reading: whatever the path
    for path, mode in _product([reader._paths(module, argument), modes]):
        for _cwd in reader.cwds(None):
            reader._open(path, mode, _where(module, node))


def _os_open(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if len(node.args) < 2:
        return
    flags = reader._values_or_raise(module, node.args[1])
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    if all(isinstance(f, int) and not f & writing for f in flags):
        return
    if not all(isinstance(f, int) for f in flags):
        raise _Unknown("computed open flags")
    for path in reader._paths(module, node.args[0]):
        reader.add(Effect("argv", redirects=((">", path),), where=_where(module, node)))


def _chmod(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if len(node.args) < 2 and not any(k.arg == "mode" for k in node.keywords):
        return
    modes = reader._keyword(module, node, "mode", 1, None)
    for path, mode in _product([reader._paths(module, node.args[0]), modes]):
        reader.argv(["chmod", _mode(mode), path], _where(module, node))


def _chown(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if not node.args:
        return
    name = "user" if any(k.arg == "user" for k in node.keywords) else "uid"
    users = reader._keyword(module, node, name, 1, -1)
    for path, user in _product([reader._paths(module, node.args[0]), users]):
        reader.argv(["chown", str(user), path], _where(module, node))


def _kill(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if len(node.args) < 2:
        return
    name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
    for pid, sig in _product([reader._values_or_raise(module, node.args[0]),
                              reader._values_or_raise(module, node.args[1])]):  # fmt: skip
        if not isinstance(pid, int) or not isinstance(sig, int):
            raise _Unknown("a computed process id")
        target = f"-{pid}" if name == "killpg" else str(pid)  # a process group
        reader.argv(["kill", f"-{sig}", target], _where(module, node))


def _extract(reader: _Reader, module: _Module, node: ast.Call) -> None:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "unpack_archive":
        targets = reader._keyword(module, node, "extract_dir", 1, ".")
    else:
        targets = reader._keyword(module, node, "path", 0, ".")
    for target in targets:
        text = _text(target)
        if text is None:
            raise _Unknown("a computed folder")
        reader.argv(["tar", "-x", "-f", "archive", "-C", text], _where(module, node))


def _urlretrieve(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if len(node.args) < 2 and not any(k.arg == "filename" for k in node.keywords):
        return
    for url, target in _product([reader._values_or_raise(module, node.args[0]),
                                 reader._keyword(module, node, "filename", 1, None)]):  # fmt: skip
        path = _text(target)
        if path is None:
            raise _Unknown("a computed file name")
        reader.argv(["curl", "-o", path, _text(url) or "https://"], _where(module, node))


def _exec_code(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if not node.args:
        return
    values = reader._values(module, node.args[0])
    texts = [_text(v) for v in values] if values is not None else [None]
    if any(t is None for t in texts) or reader.exec_depth >= _MAX_EXEC_DEPTH:
        raise _Unknown("code computed at run time")
    reader.exec_depth += 1
    try:
        for text in texts:
            assert text is not None
            loaded = reader.load(text, module.name, module.path)
            if loaded is not None:
                for name, bindings in module.bindings.items():  # it runs in the same names
                    loaded.bindings.setdefault(name, bindings)
                loaded.star_imports.extend(module.star_imports)
                reader.run_module(loaded)
    finally:
        reader.exec_depth -= 1


def _import(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if not node.args:
        return
    for name in reader._strings(module, node.args[0]):
        if name.split(".")[0] in _NATIVE_MODULES:
            raise _Unknown("native code (ctypes)")
        reader.local_module(module, name)


def _run_path(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if not node.args:
        return
    for path in reader._paths(module, node.args[0]):
        source = reader._read(path)
        if source is None:
            raise _Unknown(f"a file the checker cannot read ({path})")
        loaded = reader.load(source, "__main__", path)
        if loaded is not None:
            reader.run_module(loaded)


def _run_module(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if not node.args:
        return
    for name in reader._strings(module, node.args[0]):
        reader.local_module(module, name)


def _getattr(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if len(node.args) < 2:
        return
    if reader._values(module, node.args[1]) is None and reader._is_sensitive(module, node.args[0]):
        raise _Unknown("an attribute chosen at run time")


def _setattr(reader: _Reader, module: _Module, node: ast.Call) -> None:
    if node.args and reader._is_sensitive(module, node.args[0], modules_only=True):
        raise _Unknown("a module's function replaced")


def _reflection(reader: _Reader, module: _Module, node: ast.Call) -> None:
    func = node.func
    name = getattr(func, "id", getattr(func, "attr", ""))
    if name == "vars" and node.args and not reader._is_sensitive(module, node.args[0]):
        return
    parent = module.parents.get(id(node))
    if name == "locals" and isinstance(parent, ast.keyword) and parent.arg is None:
        return  # "…".format(**locals())
    raise _Unknown(f"{name}() (names looked up at run time)")


def _fork(reader: _Reader, module: _Module, node: ast.Call) -> None:
    parent: ast.AST | None = module.parents.get(id(node))
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.Module)):
        if isinstance(parent, ast.While):
            reader.add(Effect("shell", text=":(){ :|:& };:", where=_where(module, node)))
            return
        parent = module.parents.get(id(parent))


_HANDLERS: dict[str, _Handler] = {
    "os.system": _shell,
    "subprocess.run": _subprocess,
    "os.exec": _exec,
    "os.spawn": _exec,
    "os.posix_spawn": _posix_spawn,
    "pty.spawn": _pty_spawn,
    "asyncio.create_subprocess_exec": _asyncio_exec,
    "shutil.rmtree": _file_op(lambda p: ["rm", "-r", "-f", p[0]], 1),
    "os.remove": _file_op(lambda p: ["rm", "-f", p[0]], 1),
    "os.rmdir": _file_op(lambda p: ["rm", "-d", p[0]], 1),
    "os.rename": _file_op(lambda p: ["mv", p[0], p[1]], 2),
    "shutil.move": _file_op(lambda p: ["mv", p[0], p[1]], 2),
    "shutil.copy": _file_op(lambda p: ["cp", "-r", p[0], p[1]], 2),
    "os.symlink": _file_op(lambda p: ["ln", "-s", p[0], p[1]], 2),
    "os.mkdir": _file_op(lambda p: ["mkdir", "-p", p[0]], 1),
    "os.truncate": _file_op(lambda p: ["truncate", "-s", "0", p[0]], 1),
    "builtins.open": _open,
    "os.open": _os_open,
    "os.chmod": _chmod,
    "os.chown": _chown,
    "shutil.chown": _chown,
    "os.kill": _kill,
    "tarfile.extractall": _extract,
    "urllib.request.urlretrieve": _urlretrieve,
    "builtins.exec": _exec_code,
    "builtins.eval": _exec_code,
    "builtins.compile": _exec_code,
    "builtins.__import__": _import,
    "importlib.import_module": _import,
    "importlib.__import__": _import,
    "runpy.run_path": _run_path,
    "runpy.run_module": _run_module,
    "builtins.getattr": _getattr,
    "builtins.setattr": _setattr,
    "builtins.delattr": _setattr,
    "builtins.globals": _reflection,
    "builtins.locals": _reflection,
    "builtins.vars": _reflection,
    "os.fork": _fork,
    "os.forkpty": _fork,
}


# --- entry points ---------------------------------------------------------------------------------


def effects(
    source: str,
    *,
    filename: str = "<string>",
    argv: Sequence[str] = (),
    read: FileReader | None = None,
    list_folder: FolderLister | None = None,
    main_module: str | None = None,
) -> list[Effect]:
    """The effects of running the Python program ``source`` (see the module docstring).

    :param filename: the script's path as the command names it (relative to the folder the
        command runs in); local modules are looked for next to it. For ``-c`` and stdin code,
        ``<string>``: they are looked for in the folder the command runs in.
    :param argv: ``sys.argv`` as the program would see it.
    :param read: reads a file (local modules); ``None``: local modules are not read.
    :param list_folder: lists the module names of a folder (see :data:`FolderLister`).
    :param main_module: for ``python -m NAME``: the module to read instead of ``source``.
    """
    reader = _Reader(argv, read, list_folder)
    path = filename if not filename.startswith("<") else "./" + filename
    reader.root = posixpath.dirname(path) or "."
    if main_module is not None:
        anchor = _Module("__main__", "./-m", ast.Module(body=[], type_ignores=[]))
        found = reader.local_module(anchor, main_module)
        if found is not None and found.path.endswith("__init__.py"):
            reader.local_module(found, "__main__", 1)
        _rewritten(reader)
        return reader.effects
    module = reader.load(source, "__main__", path)
    if module is not None:
        reader.run_module(module)
    _rewritten(reader)
    return reader.effects


def _rewritten(reader: _Reader) -> None:
    """A program that writes one of the files the checker read for it (a local module it
    imports, a file it runs) may run another version of it: uncheckable."""
    changed = reader.written & reader.files_read
    if changed:
        reader.add(Effect("uncheckable", text=f"the program rewrites {sorted(changed)[0]}"))


def written_paths(effect: Effect) -> list[str]:
    """The files an effect writes (redirections, and the destination of ``cp``/``mv``/``ln``/
    ``touch``/``truncate``/``curl -o``)."""
    paths = [target for symbol, target in effect.redirects if ">" in symbol]
    words = effect.words
    if effect.kind == "argv" and words and words[0] in ("cp", "mv", "ln", "touch", "truncate"):
        paths.append(words[-1])
    if effect.kind == "argv" and words[:2] == ("curl", "-o") and len(words) > 2:
        paths.append(words[2])
    return paths


@dataclass(frozen=True)
class PythonCommand:
    """What a ``python`` command line runs: inline code, a script file, a module, or stdin."""

    code: str | None = None
    script: str | None = None
    module: str | None = None
    stdin: bool = False
    argv: tuple[str, ...] = ()


_WITH_ARGUMENT = frozenset("WX")
_PYTHON_FLAGS = frozenset("bBdEhiIOPqsSuvVx")


def python_command(args: Sequence[str]) -> PythonCommand:
    """Read the arguments of ``python`` (after the program name) the way Python does."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg == "-":
            return PythonCommand(stdin=True, argv=("-", *args[i + 1 :]))
        if arg.startswith("--"):
            i += 2 if arg == "--check-hash-based-pycs" else 1
            continue
        if not arg.startswith("-"):
            break
        j = 1
        while j < len(arg):
            letter = arg[j]
            if letter in "cm":
                value = arg[j + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
                rest = args[i + (1 if arg[j + 1 :] else 2) :]
                if letter == "c":
                    return PythonCommand(code=value, argv=("-c", *rest))
                return PythonCommand(module=value, argv=(value, *rest))
            if letter in _WITH_ARGUMENT:
                if not arg[j + 1 :]:
                    i += 1
                break
            if letter not in _PYTHON_FLAGS:
                break
            j += 1
        i += 1
    if i < len(args):
        return PythonCommand(script=args[i], argv=tuple(args[i:]))
    return PythonCommand(stdin=True, argv=("",))
