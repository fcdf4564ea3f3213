"""Parser glue: a command parsed with tree-sitter-bash and lowered into simple commands.

:class:`Lowering` walks the syntax tree once, in the order the shell would run it, and emits one
:class:`Simple` per program that would start: its argv (words expanded as far as they can be known
statically), its redirections, the wrappers it was reached through, and what it reads on stdin.
Programs that run other programs (``sudo``, ``env``, ``bash -c``, ``eval``, ``xargs``, ``find
-exec``, functions, aliases, script files, interpreters) are unwrapped into further simple
commands. What cannot be known is written as :data:`UNKNOWN` inside a word; a command whose name is
unknown carries the note ``dynamic-command``. Work is bounded (:data:`BUDGET`), so the time is
linear in the size of the command.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import posixpath
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from .programs import PROGRAMS, REMOTE

__all__ = ["UNKNOWN", "Lowering", "Simple", "parse"]

UNKNOWN = "\x00"
"""Stands for a part of a word that cannot be known before the command runs."""
MAX_VALUE = 4096  # a variable longer than this is unknown (the doubling trick stops here)
BUDGET = 60_000  # syntax nodes and emitted commands per decision
MAX_DEPTH = 48  # nested re-readings (bash -c, eval, functions, substitutions)
MAX_FIELDS = 64  # brace expansion and xargs fields

ScriptReader = Callable[[str], "str | None"]
FrontEnd = Callable[[str, str, list[str], ScriptReader], list[tuple[str, Any]]]
Output = tuple[str, str | None]  # (kind, text): kind "", "text", "download", "decode", "other"
_WORD_NODES = frozenset({"word", "string", "raw_string", "concatenation", "number"})
_WORDS = frozenset({"command_name", "word", "concatenation", "string", "raw_string"})
_FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish"})
_VARIABLE = re.compile(r"\$\{?(\w+)\}?")
_BLANKS = re.compile(r"[ \t\n]+")
_SAFE_WORD = re.compile(r"[\w@%+=:,./~^-]+")
_SAFE_LINE = re.compile(r"[\w@%+=:,./~^-]+(?: [\w@%+=:,./~^-]+)*")
_EXPANDS = re.compile(rb"[$`<>]")
_LITERAL: dict[bytes, tuple[tuple[str, ...], tuple[str, ...]]] = {}
"""The words of commands without expansions or redirections, by their text."""
_GLOB = re.compile(r"[*?\[]")
_ECHO_FLAGS = re.compile(r"-[neE]+")
_ACTIVE = frozenset(
    {"cd", "alias", "echo", "printf", "cat", "tee", "tac", "base64", "xxd", "curl", "wget", "find",
     "cp", "mv", "install", "ln", "xargs", "eval", "source", ".", *_SHELLS, *REMOTE}
    | {name for name, spec in PROGRAMS.items() if "lang" in spec or "wraps" in spec}
)  # fmt: skip
"""Programs whose lowering does more than record them (they print, change state, run others)."""
_MANIFESTS = {name: spec["manifests"] for name, spec in PROGRAMS.items() if "manifests" in spec}
_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "e": "\x1b", "a": "\a", "\\": "\\", "'": "'"}


@dataclass(slots=True)
class Simple:
    """One program the command would start.

    :param argv: the words, :data:`UNKNOWN` where a part cannot be known.
    :param redirects: ``(operator, target)`` pairs (``>``, ``>>``, ``<``, ...).
    :param via: the programs it was reached through (``sudo``, ``xargs``, ``bash``...).
    :param stdin: text it reads on stdin when that is known (heredoc, ``echo x |``).
    :param notes: what the reading found that no argv shows (``dynamic-command``, ...).
    :param cwd: the folder it starts in when the command changed it, else ``None``.
    """

    argv: list[str]
    redirects: list[tuple[str, str]] = field(default_factory=list)
    via: tuple[str, ...] = ()
    stdin: str | None = None
    notes: tuple[str, ...] = ()
    cwd: str | None = None

    def render(self) -> str:
        """The command as one line, ``?`` for unknown parts (shown to people, and the target
        an approval is remembered under)."""
        text = " ".join(self.argv)
        if self.redirects or not _SAFE_LINE.fullmatch(text) or text.count(" ") >= len(self.argv):
            words = [_quote(w) for w in self.argv]
            words += [f"{op} {_quote(t)}" for op, t in self.redirects]
            text = " ".join(words)
        text = text or "(" + ", ".join(self.notes) + ")"
        return text if len(text) <= 300 else text[:297] + "..."


def _quote(word: str) -> str:
    if _SAFE_WORD.fullmatch(word):
        return word
    return shlex.quote(word).replace(UNKNOWN, "?")


@cache
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse(text: str) -> Any:
    """The tree-sitter syntax tree of ``text``."""
    return _parser().parse(text.encode("utf-8", "surrogatepass"))


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", "replace"))


def _unescape(word: str) -> str:
    if "\\" not in word:
        return word
    return re.sub(r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), word)


@lru_cache(maxsize=4096)
def _plain(raw: str, split: bool) -> tuple[str, ...]:
    """The fields of a word without expansions (braces only)."""
    return tuple(_unescape(w) for w in (_braces(raw) if split and "{" in raw else [raw]))


def _ansi_c(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        s = m.group(1)
        if s[0] == "x":
            return chr(int(s[1:], 16))
        if s[0] in "01234567":
            return chr(int(s, 8) % 256)
        return _ANSI_ESCAPES.get(s, "\\" + s)

    return re.sub(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", one, body)


def _braces(word: str) -> list[str]:
    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if not m:
        return [word]
    out: list[str] = []
    for part in m.group(1).split(","):
        out += _braces(word[: m.start()] + part + word[m.end() :])
        if len(out) > MAX_FIELDS:
            return [UNKNOWN]
    return out


def _decode(kind: str, text: str) -> str | None:
    try:
        if kind == "base64":
            return base64.b64decode("".join(text.split()), validate=True).decode()
        return binascii.unhexlify("".join(text.split())).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def _dangling(node: Any) -> bool:
    """Whether a word ends with a lone ``$`` (tree-sitter-bash ends a word there when a second
    ``$NAME`` is glued to it, and the name starts the next word)."""
    if node.type == "command_name":
        node = node.named_children[0] if node.named_child_count else node
    if node.type != "concatenation":
        return False
    return bool(node.children[-1].type == "$")


def _short(args: list[str], letters: str) -> bool:
    return any(
        a.startswith("-") and not a.startswith("--") and any(c in a[1:] for c in letters)
        for a in args
    )


class Lowering:
    """One reading of one command: call :meth:`read` with the text, then find the simple
    commands in :attr:`out`.

    :param read_script: reads a script file the command runs (``None``: scripts are not read).
    :param front_end: lowers another language's code (``lang, code, argv``, and a reader of
        local Python modules) into items
        ``("shell", text)``, ``("argv", words)``, ``("write", path)`` or ``("note", name)``.
    :param cwd: the folder the command starts in when it is not the workspace.
    """

    def __init__(
        self,
        read_script: ScriptReader | None = None,
        front_end: FrontEnd | None = None,
        cwd: str | None = None,
    ) -> None:
        self.read_script = read_script
        self.front_end = front_end
        self.out: list[Simple] = []
        self.vars: dict[str, str] = {"HOME": "~", "IFS": " \t\n", "HERMES_HOME": "~/.hermes"}
        self.funcs: dict[str, Any] = {}
        self.aliases: dict[str, str] = {}
        self.files: dict[str, Output] = {}
        self.cwd = cwd
        self.args: list[str] = []
        self.calls: list[str] = []
        self.depth = 0
        self.budget = BUDGET
        self.in_pipeline = False
        self.pending: Any = None
        self.links: dict[str, str] = {}
        self.decoded_texts: set[str] = set()
        self.modules: set[str] = set()
        self.folders: list[str] = [""]

    # --- entry points -------------------------------------------------------------------

    def note(self, *notes: str, argv: list[str] | None = None) -> None:
        """Record what the reading found that no argv shows."""
        self.out.append(Simple(argv or [], notes=notes, cwd=self.cwd))

    def read(self, text: str) -> Output:
        """Parse ``text`` as shell code and lower every command in it; the answer is what the
        last statement prints."""
        if self.depth >= MAX_DEPTH:
            self.note("uncheckable")
            return ("other", None)
        tree = parse(text)
        if tree.root_node.has_error:
            self.note("uncheckable")
        if tree.root_node.has_error and _FORK_BOMB.search(text):
            self.note("fork-bomb")
        self.depth += 1
        try:
            return self.stmt(tree.root_node)
        finally:
            self.depth -= 1

    # --- statements ---------------------------------------------------------------------

    def _spent(self) -> Output:
        """The answer once the budget is spent (noted the first time)."""
        if self.budget == 0:
            self.note("uncheckable")
        return ("other", None)

    def stmt(self, node: Any, stdin: Output = ("", None)) -> Output:
        """Lower one statement; the answer is what it prints (kind and text)."""
        self.budget -= 1
        if self.budget <= 0:
            return self._spent()
        kind = node.type
        if kind == "command":
            return self.command(node, [], stdin)
        if kind == "redirected_statement":
            return self.redirected(node, stdin)
        if kind == "pipeline":
            return self.pipeline(node, stdin)
        if kind in ("variable_assignment", "variable_assignments"):
            self.assignments(node)
            return ("", None)
        if kind in ("declaration_command", "unset_command"):
            return self.declaration(node)
        if kind == "ERROR":
            raw = _text(node).strip()
            if node.named_children and node.named_children[0].type in _WORDS and " " not in raw:
                self.run([_unescape(w) for w in _braces(raw)], [], stdin, ())
        if kind == "function_definition":
            name = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if name is not None and body is not None:
                self.funcs[_text(name)] = body
            return ("", None)
        if kind == "for_statement":
            return self.for_loop(node)
        if kind in ("comment", "heredoc_body", "heredoc_end", "heredoc_start"):
            return ("", None)
        last: Output = ("", None)
        for child in node.named_children:
            if child.type not in _WORD_NODES:
                last = self.stmt(child, stdin)
            else:
                self.fields(child)
        return last

    def pipeline(self, node: Any, stdin: Output) -> Output:
        """Lower a pipeline: each command reads what the one before it prints."""
        out = stdin
        outer, self.in_pipeline = self.in_pipeline, True
        try:
            for child in node.named_children if node.type == "pipeline" else [node]:
                out = self.stmt(child, out)
        finally:
            self.in_pipeline = outer
        return out

    def redirected(self, node: Any, stdin: Output) -> Output:
        """Lower a statement with redirections (files, heredocs, here-strings)."""
        redirects: list[tuple[str, str]] = []
        body = node.child_by_field_name("body")
        for child in node.children_by_field_name("redirect"):
            stdin = self.redirect(child, redirects, stdin)
        if body is None:
            self.out.append(Simple([], redirects, cwd=self.cwd))
            return ("", None)
        pending, self.pending = self.pending, None
        if body.type == "command":
            out = self.command(body, redirects, stdin)
            return self.pipeline(pending, out) if pending is not None else out
        if body.type == "list" and body.named_children:
            *head, last = body.named_children
            for child in head:
                self.stmt(child)
            if last.type == "command":
                return self.command(last, redirects, stdin)
        if body.type == "pipeline" and body.named_children:
            first, *rest = body.named_children
            out = (
                self.command(first, redirects, stdin)
                if first.type == "command"
                else self.stmt(first, stdin)
            )
            outer, self.in_pipeline = self.in_pipeline, True
            for child in rest:
                out = self.stmt(child, out)
            self.in_pipeline = outer
            return out
        if redirects:
            self.out.append(Simple([], redirects, cwd=self.cwd))
        return self.stmt(body, stdin)

    def redirect(self, node: Any, redirects: list[tuple[str, str]], stdin: Output) -> Output:
        """Record one redirection; the answer is the command's stdin afterwards."""
        if node.type == "heredoc_redirect":
            body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
            for c in node.named_children:
                if c.type in ("pipeline", "command"):
                    self.pending = c
            return ("text", _text(body) if body is not None else "")
        if node.type == "herestring_redirect":
            words = [self.value(c) for c in node.named_children]
            return ("text", " ".join(words) + "\n")
        op = next((_text(c) for c in node.children if not c.is_named), ">")
        dest = node.child_by_field_name("destination")
        target = self.value(dest) if dest is not None else UNKNOWN
        if op in ("<&", ">&", "&>", "&>>") and re.fullmatch(r"[0-9-]+", target):
            return stdin
        redirects.append((op, target))
        if op == "<":
            return self.files.get(target) or ("file", target)
        return stdin

    def assignments(self, node: Any) -> None:
        """Record variable assignments (an ``export`` each, as the shell would)."""
        items = [node] if node.type == "variable_assignment" else node.named_children
        for item in items:
            name_node = item.child_by_field_name("name")
            value_node = item.child_by_field_name("value")
            if name_node is None:
                continue
            name = _text(name_node)
            value = self.value(value_node) if value_node is not None else ""
            if len(value) > MAX_VALUE:
                value = UNKNOWN
            self.vars[name] = value
            self.out.append(Simple(["export", f"{name}={value}"], cwd=self.cwd, via=("=",)))

    def declaration(self, node: Any) -> Output:
        """Lower ``export``, ``declare``, ``local``, ``unset`` and the like."""
        head = _text(node.children[0])
        argv = [head]
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignments(child)
                argv.append(_text(child.child_by_field_name("name") or child))
            else:
                argv += self.fields(child)
        if len(argv) > 1 or head in ("export", "declare", "typeset", "set"):
            self.out.append(Simple(argv, cwd=self.cwd))
        return ("", None)

    def for_loop(self, node: Any) -> Output:
        """Lower a ``for`` loop: its body once per known value (or once, unknown)."""
        var = node.child_by_field_name("variable")
        values: list[str] = []
        body = node.child_by_field_name("body")
        for child in node.children_by_field_name("value"):
            values += self.fields(child)
        if var is not None:
            self.vars[_text(var)] = values[0] if len(values) == 1 else UNKNOWN
        for value in values[:4] if len(values) <= 4 else [UNKNOWN]:
            if var is not None:
                self.vars[_text(var)] = value
            if body is not None:
                self.stmt(body)
        return ("other", None)

    # --- words --------------------------------------------------------------------------

    def value(self, node: Any) -> str:
        """The word as one string (no field splitting)."""
        return " ".join(self.fields(node, split=False))

    def fields(self, node: Any, split: bool = True) -> list[str]:
        """The fields a word expands into."""
        kind = node.type
        if kind == "word" or (
            kind == "concatenation" and all(c.type == "word" for c in node.named_children)
        ):
            raw = _text(node)
            if kind == "concatenation" and node.named_child_count != node.child_count:
                raw = "".join(_text(c) for c in node.children)
            if "$" not in raw:
                return list(_plain(raw, split))
            words = _braces(raw) if split and "{" in raw else [raw]
            words = [_VARIABLE.sub(lambda m: self.variable(m.group(1)), w) for w in words]
            words = [x for w in words for x in _BLANKS.split(w) if x] if split else words
            return [_unescape(w) for w in words]
        out: list[str] = [""]
        for piece, splittable in self.pieces(node):
            if not (split and splittable):
                out[-1] += piece
                continue
            parts = re.split("[" + re.escape(self.vars.get("IFS", " ")) + "]+", piece)
            out[-1] += parts[0]
            out += parts[1:]
        return [w for w in out if w] if split else out[:1]

    def pieces(self, node: Any) -> Iterator[tuple[str, bool]]:
        """Each part of a word with whether the shell splits it into fields."""
        kind = node.type
        if kind == "concatenation":
            for child in node.named_children:
                yield from self.pieces(child)
        elif kind in ("word", "number", "variable_name"):
            yield _unescape(_text(node)), False
        elif kind == "raw_string":
            yield _text(node)[1:-1], False
        elif kind == "ansi_c_string":
            yield _ansi_c(_text(node)[2:-1]), False
        elif kind in ("string", "translated_string"):
            yield "".join(self.string(node)), False
        elif kind == "simple_expansion":
            yield self.variable(_text(node)[1:]), True
        elif kind == "expansion":
            yield self.expansion(node), True
        elif kind in ("command_substitution", "process_substitution"):
            yield self.substitution(node), kind == "command_substitution"
        elif kind == "brace_expression":
            yield _text(node), False
        else:
            for child in node.named_children:
                if child.type in ("command_substitution", "process_substitution"):
                    self.substitution(child)
            yield UNKNOWN, False

    def string(self, node: Any) -> Iterator[str]:
        """The parts of a double-quoted string, expanded."""
        for child in node.named_children:
            if child.type == "string_content":
                yield re.sub(r"\\([$`\"\\\n])", r"\1", _text(child))
            else:
                yield "".join(p for p, _ in self.pieces(child))

    def variable(self, name: str) -> str:
        """The value of a variable or positional parameter (:data:`UNKNOWN` when unknown)."""
        if name.isdigit():
            index = int(name) - 1
            return self.args[index] if 0 <= index < len(self.args) else UNKNOWN
        if name in ("@", "*"):
            return " ".join(self.args) if self.calls else UNKNOWN
        return self.vars.get(name, UNKNOWN)

    def expansion(self, node: Any) -> str:
        """The value of a ``${...}`` expansion (defaults, prefix and suffix removal)."""
        inner = _text(node)[2:-1]
        for child in node.named_children:
            if child.type in ("command_substitution", "process_substitution", "expansion"):
                self.pieces(child).__next__()
        m = re.fullmatch(
            r"(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*])(?:(:?[-=?+]|%%?|##?)(.*))?", inner
        )
        if not m or m.group(1):
            return UNKNOWN
        value = self.variable(m.group(2))
        op, arg = m.group(3), m.group(4) or ""
        if op in ("-", ":-", "=", ":="):
            default = arg if "$" not in arg else UNKNOWN
            return default + UNKNOWN if value == UNKNOWN else value
        if op in ("%", "%%") and "*" not in arg and value.endswith(arg):
            return value[: len(value) - len(arg)]
        if op in ("#", "##") and "*" not in arg and value.startswith(arg):
            return value[len(arg) :]
        return value if not op or op in ("?", ":?", "%", "%%", "#", "##") else UNKNOWN

    def substitution(self, node: Any) -> str:
        """Lower a ``$(...)`` or ``<(...)``; the answer is its text or a file name."""
        out: Output = ("other", None)
        outer, self.in_pipeline = self.in_pipeline, False
        for child in node.named_children:
            out = self.stmt(child)
        self.in_pipeline = outer
        if node.type == "process_substitution":
            name = f"/dev/fd/{60 + len(self.files)}"
            self.files[name] = out
            return name
        if out[0] == "text" and out[1] is not None:
            return out[1].rstrip("\n")
        return UNKNOWN

    # --- commands -----------------------------------------------------------------------

    def command(self, node: Any, redirects: list[tuple[str, str]], stdin: Output) -> Output:
        """Lower one command node: its assignments, argv and redirections."""
        text = node.text
        known = _LITERAL.get(text)  # words known from the text alone (no expansion, redirection)
        if known is None:
            env, argv, stdin = self.words(node, redirects, stdin)
            if _EXPANDS.search(text) is None and len(_LITERAL) < 4096:
                _LITERAL[text] = (env, argv)
        else:
            env, argv = known
        for item in env:
            self.out.append(Simple(["export", item], cwd=self.cwd, via=("=",)))
        return self.run(list(argv), redirects, stdin, ())

    def words(
        self, node: Any, redirects: list[tuple[str, str]], stdin: Output
    ) -> tuple[tuple[str, ...], tuple[str, ...], Output]:
        """A command's assignments and argv (its redirections go to ``redirects``), and its
        stdin afterwards."""
        argv: list[str] = []
        env: list[str] = []
        children = node.named_children
        i = 0
        while i < len(children):
            child, i = children[i], i + 1
            kind = child.type
            if kind == "variable_assignment":
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                env.append(f"{_text(name) if name else '?'}={self.value(value) if value else ''}")
            elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                stdin = self.redirect(child, redirects, stdin)
            elif (
                i < len(children) and _dangling(child) and children[i].start_byte == child.end_byte
            ):
                end = i + 1
                while (
                    end < len(children)
                    and _dangling(children[end - 1])
                    and (children[end].start_byte == children[end - 1].end_byte)
                ):
                    end += 1
                argv += self.reread("".join(_text(c) for c in children[i - 1 : end]))
                i = end
            elif kind == "command_name":
                argv += self.fields(child.named_children[0]) if child.named_child_count else []
            else:
                argv += self.fields(child)
        return tuple(env), tuple(argv), stdin

    def reread(self, word: str) -> list[str]:
        """The fields of a word tree-sitter-bash cut at the ``$`` of a ``$NAME`` glued to it
        (``rm$IFS-rf$IFS/``): the word read again with every ``$NAME`` braced."""
        tree = parse(": " + re.sub(r"\$([A-Za-z_]\w*|[0-9@*#?$!-])", r"${\1}", word))
        found = tree.root_node.named_children[:1]
        if tree.root_node.has_error or not found or found[0].type != "command":
            return [UNKNOWN]
        return [f for child in found[0].named_children[1:] for f in self.fields(child)]

    def run(
        self, argv: list[str], redirects: list[tuple[str, str]], stdin: Output, via: tuple[str, ...]
    ) -> Output:
        """Lower one simple command (and what it runs); the answer is what it prints."""
        self.budget -= 1
        if self.budget <= 0:
            return self._spent()
        if not argv:
            if redirects:
                self.out.append(Simple([], redirects, via, cwd=self.cwd))
            return ("", None)
        name = argv[0]
        base = name.rpartition("/")[2]
        text = stdin[1] if stdin[0] == "text" else None
        if not (base in _ACTIVE or self.aliases or self.funcs or self.links or "/" in name
                or UNKNOWN in name or _GLOB.search(name) or base in _MANIFESTS):  # fmt: skip
            self.out.append(Simple(argv, redirects, via, text, (), self.cwd))
            return ("other", None) if not redirects else self.redirected_output(redirects, None)
        if UNKNOWN in name or _GLOB.search(name):
            self.out.append(Simple(argv, redirects, via, notes=("dynamic-command",), cwd=self.cwd))
            return ("other", None)
        if base in self.aliases and "alias" not in via:
            self.depth += 1
            self.read(self.aliases.pop(base) + " " + " ".join(shlex.quote(a) for a in argv[1:]))
            self.depth -= 1
            return ("other", None)
        if base in self.funcs and "/" not in name:
            return self.call(base, argv, stdin)
        if self.links:
            argv = [argv[0]] + [self.linked(a) for a in argv[1:]]
        manifests = _MANIFESTS.get(base, ())
        notes = ("written-manifest",) if any(m in self.files for m in manifests) else ()
        self.out.append(Simple(argv, redirects, via, text, notes, cwd=self.cwd))
        out = self.unwrap(base, argv, stdin, via)
        if base in ("cp", "mv", "install", "ln", "tee") and len(argv) > 2:
            self.files[posixpath.normpath(argv[-1])] = ("other", None)
            if base == "ln" and any(a.startswith("-") and "s" in a for a in argv[1:-2]):
                self.links[argv[-1].strip("/").removeprefix("./")] = argv[-2]
        return out if not redirects else self.redirected_output(redirects, out)

    def redirected_output(self, redirects: list[tuple[str, str]], out: Output | None) -> Output:
        """Record the files a command's output goes to; the answer is what it still prints."""
        written = False
        for op, target in redirects:
            if op in (">", ">>", ">|", "&>"):
                keep = out is not None and out[0] in ("text", "download")
                self.files[posixpath.normpath(target)] = out if keep and out else ("other", None)
                written = True
        return ("", None) if written else out or ("other", None)

    def linked(self, word: str) -> str:
        """``word`` with a symbolic link the command made followed to its target."""
        head, sep, rest = word.removeprefix("./").partition("/")
        target = self.links.get(head.rstrip("/"))
        return word if target is None else target.rstrip("/") + "/" + rest if sep else target

    def call(self, name: str, argv: list[str], stdin: Output) -> Output:
        """Lower a call of a function the command defined (a recursion piped is a fork bomb)."""
        if name in self.calls:
            if self.in_pipeline:
                self.note("fork-bomb", argv=[name])
            return ("other", None)
        if len(self.calls) > 16:
            self.note("uncheckable")
            return ("other", None)
        saved, self.args = self.args, argv[1:]
        self.calls.append(name)
        try:
            return self.stmt(self.funcs[name], stdin)
        finally:
            self.calls.pop()
            self.args = saved

    def nested(self, text: str, via: tuple[str, ...]) -> Output:
        """Read ``text`` as shell code run by a wrapper (``bash -c``, ``eval``, ``ssh``)."""
        start = len(self.out)
        out = self.read(text)
        for simple in self.out[start:]:
            simple.via = via + simple.via
        return out

    def unwrap(self, base: str, argv: list[str], stdin: Output, via: tuple[str, ...]) -> Output:
        """Lower what a program runs or prints (wrappers, shells, interpreters, scripts)."""
        spec = PROGRAMS.get(base)
        args = argv[1:]
        printed = self.prints(base, args, stdin)
        if printed is not None:
            return printed
        if base == "find":
            self.find(args, via)
            roots = [a for a in args if not a.startswith("-")][:1] or ["."]
            return ("text", roots[0].rstrip("/") + "/" + UNKNOWN)
        if base == "xargs":
            self.xargs(args, stdin, via)
        elif base in _SHELLS or base in ("eval", "source", "."):
            return self.shell(base, args, stdin, via)
        elif base in REMOTE:
            inner = self.inner(REMOTE[base], args)
            if inner and base == "ssh":
                return self.nested(" ".join(inner), via + (base,))
            if inner:
                return self.run(inner, [], stdin, via + (base,))
        elif spec is not None and spec.get("lang") and self.front_end is not None:
            self.code(base, str(spec["lang"]), args, stdin, via)
        elif "/" in argv[0] and (spec is None or "wraps" not in spec):
            self.script(argv[0], via)
        elif spec is not None and "wraps" in spec:
            inner = self.inner(spec, args)
            if inner is not None:
                return self.run(inner, [], stdin, via + (base,))
        return ("other", None)

    def prints(self, base: str, args: list[str], stdin: Output) -> Output | None:
        """What a builtin or a filter prints (``None`` for other programs); ``cd`` and
        ``alias`` change what the rest of the command reads."""
        if base == "cd":
            self.change_dir(args)
        elif base == "alias":
            for key, _, value in (a.partition("=") for a in args if "=" in a):
                self.aliases[key] = value
        elif base == "echo":
            words = " ".join(a for a in args if not _ECHO_FLAGS.fullmatch(a))
            return ("text", words + "\n") if UNKNOWN not in words else ("other", None)
        elif base == "printf":
            return self.printf(args)
        elif base in ("cat", "tee", "tac") and all(a.startswith("-") for a in args):
            return stdin
        elif base == "cat" and len(args) == 1:
            return self.files.get(args[0]) or ("file", args[0])
        elif base == "base64" and (_short(args, "d") or "--decode" in args):
            return self.decoded("base64", stdin)
        elif base == "xxd" and _short(args, "r"):
            return self.decoded("hex", stdin)
        elif base in ("curl", "wget"):
            return self.download(base, args)
        else:
            return None
        return ("other", None)

    def change_dir(self, args: list[str]) -> None:
        """Follow ``cd``: later commands start in that folder."""
        target = next((a for a in args if not a.startswith("-")), "~")
        if UNKNOWN in target:
            self.cwd = UNKNOWN
        elif target.startswith(("/", "~")) or self.cwd is None:
            self.cwd = target if target.startswith(("/", "~")) else posixpath.normpath(target)
        else:
            self.cwd = posixpath.normpath(posixpath.join(self.cwd, target))
        if self.cwd is not None and len(self.cwd) > 256:
            self.cwd = UNKNOWN  # a path this long is a trick, not a folder

    def printf(self, args: list[str]) -> Output:
        """What ``printf`` prints when its format and arguments are known."""
        if not args or UNKNOWN in "".join(args):
            return ("other", None)
        fmt, rest = args[0], args[1:]
        try:
            fmt = codecs.decode(fmt.replace("%%", "\x01"), "unicode_escape")
        except UnicodeDecodeError:
            return ("other", None)
        parts = re.split(r"%[-0-9.]*[sdbcq]", fmt)
        count = max(1, len(parts) - 1)
        text = ""
        for i in range(0, max(1, len(rest)), count):
            values = rest[i : i + count] + [""] * count
            text += parts[0] + "".join(v + p for v, p in zip(values, parts[1:], strict=False))
        return ("text", text.replace("\x01", "%"))

    def decoded(self, kind: str, stdin: Output) -> Output:
        """What ``base64 -d`` or ``xxd -r`` prints, from the text it reads."""
        if stdin[0] == "text" and stdin[1] is not None:
            text = _decode(kind, stdin[1])
            if text is not None:
                self.decoded_texts.add(text)
                return ("text", text)
        if stdin[0] == "download":
            return stdin
        return ("decode", None)

    def download(self, base: str, args: list[str]) -> Output:
        """What ``curl``/``wget`` print, or the file they save a download to."""
        out = None
        url = next((u for u in args if "://" in u), "")
        for i, a in enumerate(args):
            if base == "curl" and re.fullmatch(r"-[a-zA-Z]*O|--remote-name", a):
                out = posixpath.basename(url) or UNKNOWN
            elif re.fullmatch(r"-[a-zA-Z]*[oO]|--output|--output-document", a) and i + 1 < len(
                args
            ):
                out = args[i + 1]
            elif re.fullmatch(r"-[a-zA-Z]*[oO]\S+", a):
                out = re.sub(r"^-[a-zA-Z]*?[oO]", "", a)
        if base == "wget" and out is None:
            out = posixpath.basename(url) or "index.html"
        if out is None or out == "-":
            return ("download", None)
        self.files[posixpath.normpath(out)] = ("download", None)
        return ("", None)

    def find(self, args: list[str], via: tuple[str, ...]) -> None:
        """Lower ``find -delete`` and ``-exec``/``-ok`` into the commands they run."""
        roots = [a for a in args if not a.startswith(("-", "(", "!"))][:8]
        roots = roots[: next((i for i, a in enumerate(args) if a.startswith("-")), len(roots))]
        name = UNKNOWN
        for i, a in enumerate(args[:-1]):
            if a in ("-name", "-iname") and UNKNOWN not in args[i + 1]:
                name = args[i + 1]
        targets = [r.rstrip("/") + "/" + name for r in roots or ["."]]
        if "-delete" in args:
            for t in targets:
                self.run(["rm", "-r", t], [], ("", None), via + ("find",))
        i = 0
        while i < len(args):
            if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
                inner = args[i + 1 : end]
                for t in targets[:4]:
                    words = [w.replace("{}", t) for w in inner]
                    self.run(words, [], ("", None), via + ("find",))
                i = end
            i += 1

    def xargs(self, args: list[str], stdin: Output, via: tuple[str, ...]) -> None:
        """Lower ``xargs``: its command with the items it reads."""
        spec = PROGRAMS["xargs"]
        inner = self.inner(spec, args) or ["echo"]
        replace = next(
            (args[i + 1] for i, a in enumerate(args[:-1]) if a == "-I"),
            next((a[2:] for a in args if a.startswith("-I") and len(a) > 2), None),
        )
        if stdin[0] == "text" and stdin[1] is not None and len(stdin[1]) < MAX_VALUE:
            items = stdin[1].split("\0" if "-0" in args else None)[:MAX_FIELDS] or [""]
        else:
            items = [UNKNOWN]
        if replace:
            for item in items[:4]:
                self.run(
                    [w.replace(replace, item) for w in inner], [], ("", None), via + ("xargs",)
                )
        else:
            self.run(inner + items, [], ("", None), via + ("xargs",))

    def inner(self, spec: dict[str, Any], args: list[str]) -> list[str] | None:
        """The command a wrapper runs (``sudo -u x CMD`` -> ``CMD``), ``None`` when none."""
        with_value = set(spec.get("options", ()))
        skip = int(spec.get("skip", 0))
        i = 0
        prefix = list(spec.get("prefix", ()))
        while i < len(args):
            a = args[i]
            if prefix and a == prefix[0]:
                prefix.pop(0)
            elif a == "--":
                i += 1
                break
            elif a in with_value:
                i += 1
            elif a.startswith("-") and a != "-" or (spec.get("assignments") and "=" in a[1:]):
                if a in spec.get("string", ()) and i + 1 < len(args):
                    self.nested(args[i + 1], (spec.get("name", "wrapper"),))
                    return None
            elif skip:
                skip -= 1
            elif not prefix:
                break
            else:
                return None
            i += 1
        return args[i:] or None

    def shell(self, base: str, args: list[str], stdin: Output, via: tuple[str, ...]) -> Output:
        """Lower a shell, ``eval`` or ``source``: the code it runs, read as shell."""
        here = via + (base,)
        if base == "eval":
            return self.nested(" ".join(args), here)
        if base in ("source", "."):
            self.script(args[0] if args else UNKNOWN, here)
            return ("other", None)
        for i, a in enumerate(args):
            if re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", a):
                return self.nested(args[i + 1] if i + 1 < len(args) else UNKNOWN, here)
            if a in ("-s", "-") or (a.startswith("-") and a not in ("-o", "+o")):
                continue
            self.script(a, here)
            return ("other", None)
        self.stdin_code(stdin, here, lambda text: self.nested(text, here))
        return ("other", None)

    def stdin_code(
        self,
        stdin: Output,
        via: tuple[str, ...],
        read: Callable[[str], Any],
        read_file: Callable[[str], Any] | None = None,
    ) -> None:
        """Judge the code a shell or interpreter reads on stdin."""
        kind, text = stdin
        if kind == "text" and text is not None:
            if text in self.decoded_texts:
                self.note("decode-to-shell", argv=list(via[-1:]))
            read(text)
        elif kind == "file" and text is not None and self.source(text)[0] in ("unread", "missing"):
            self.note("pipe-to-shell", argv=list(via[-1:]))
        elif kind == "file" and text is not None and read_file is not None:
            read_file(text)
        elif kind == "download":
            self.note("download-to-shell", argv=list(via[-1:]))
        elif kind == "decode":
            self.note("decode-to-shell", argv=list(via[-1:]))
        elif kind == "file" and text is not None:
            self.script(text, via)
        elif kind or self.in_pipeline:
            self.note("pipe-to-shell", argv=list(via[-1:]))

    def source(self, path: str) -> tuple[str, str | None]:
        """The text of a file the command runs: ``(kind, text)``; kind ``"unread"`` when no
        reader was given, ``"missing"`` when it cannot be read."""
        path = posixpath.normpath(path) if path else path
        if path in self.files:
            kind, text = self.files[path]
            return (kind if kind != "text" else "text", text)
        if UNKNOWN in path:
            return ("missing", None)
        if self.read_script is None:
            return ("unread", None)
        text = self.read_script(path)
        return ("text", text) if text is not None else ("missing", None)

    def script(
        self, path: str, via: tuple[str, ...], lang: str | None = None, rest: tuple[str, ...] = ()
    ) -> None:
        """Judge the file ``path`` a command runs: as ``lang`` code when given, else as the
        language its ``#!`` line names, else as shell."""
        kind, text = self.source(path)
        if kind == "text" and text is not None:
            first = text.split("\n", 1)[0] if text.startswith("#!") else ""
            named = [w for w in re.findall(r"[\w.]+", first) if "lang" in PROGRAMS.get(w, {})]
            lang = lang or (str(PROGRAMS[named[0]]["lang"]) if named else None)
            if lang and self.front_end is not None:
                self.lower_code(lang, text, [path, *rest], via)
            else:
                self.nested(text, via)
        elif kind == "download":
            self.note("download-to-shell", argv=[path])
        elif kind != "unread":
            self.note("uncheckable", argv=[path])

    def code(
        self, base: str, lang: str, args: list[str], stdin: Output, via: tuple[str, ...]
    ) -> None:
        """Lower an interpreter's command line: inline code, a module, a script or stdin."""
        here = via + (base,)
        flags = PROGRAMS[base]
        with_value = set(flags.get("options", ()))
        code_opts = tuple(flags.get("code", ()))
        i = 0
        while i < len(args):
            a = args[i]
            if a in code_opts or (
                a.startswith("-")
                and not a.startswith("--")
                and a[-1:] in "ce"
                and a[1:-1].isalpha()
                and "-" + a[-1] in code_opts  # fmt: skip
            ):
                self.lower_code(lang, args[i + 1] if i + 1 < len(args) else "", args[i + 2 :], here)
                return
            if a == "-m" or a.startswith("-m") and lang == "python" and len(a) > 2:
                module = a[2:] or (args[i + 1] if i + 1 < len(args) else "")
                rest = args[i + 1 :] if a[2:] else args[i + 2 :]
                self.module(module, rest, here)
                return
            if a in with_value:
                i += 2
                continue
            if a == "-" or not a.startswith("-"):
                break
            if a in ("-V", "--version", "-h", "--help"):
                return
            i += 1
        if i < len(args) and args[i] != "-":
            self.script(args[i], here, lang, tuple(args[i + 1 :]))
        else:
            self.stdin_code(
                stdin,
                here,
                lambda text: self.lower_code(lang, text, [], here),
                lambda path: self.script(path, here, lang),
            )

    def module(self, name: str, rest: list[str], via: tuple[str, ...]) -> None:
        """Lower ``python -m NAME``: the workspace's module, else the program of that name."""
        path = name.replace(".", "/") + ".py"
        kind, text = self.source(path)
        if kind == "text" and text is not None:
            self.lower_code("python", text, [path, *rest], via)
        else:
            self.run([name.split(".")[0], *rest], [], ("", None), via)

    def local_module(self, path: str, via: tuple[str, ...]) -> None:
        """Read a module a Python program imports, when it is a file of the workspace."""
        if self.read_script is None and not self.files:
            return
        for folder in self.folders:
            for name in (path + ".py", path + "/__init__.py"):
                name = posixpath.join(folder, name) if folder else name
                if name in self.modules:
                    return
                kind, text = self.source(name)
                if kind == "other":
                    self.note("uncheckable", argv=[name])
                if kind == "text" and text is not None:
                    self.modules.add(name)
                    if len(self.modules) > 32:
                        self.note("uncheckable")
                        return
                    self.lower_code("python", text, [name], via)
                    return

    def module_text(self, path: str) -> str | None:
        """The text of a local Python module (``pkg/mod`` for ``pkg.mod``), ``None`` when the
        workspace holds none (the front end follows names the module re-exports)."""
        if self.read_script is None and not self.files:
            return None
        for folder in self.folders:
            for name in (path + ".py", path + "/__init__.py"):
                kind, text = self.source(posixpath.join(folder, name) if folder else name)
                if kind == "text":
                    return text
        return None

    def lower_code(self, lang: str, code: str, argv: list[str], via: tuple[str, ...]) -> None:
        """Judge a program by what its front end says it does."""
        assert self.front_end is not None
        for kind, item in self.front_end(lang, code, argv, self.module_text):
            if kind == "shell":
                self.nested(str(item), via)
            elif kind == "argv":
                self.run(list(item), [], ("", None), via)
            elif kind == "write":
                self.files[posixpath.normpath(str(item))] = ("other", None)
                self.out.append(Simple([lang], [(">", str(item))], via, cwd=self.cwd))
            elif kind == "read":
                self.out.append(Simple([lang], [("<", str(item))], via, cwd=self.cwd))
            elif kind == "module":
                self.local_module(str(item), via)
            elif kind == "folder":
                self.folders.append(str(item))
            else:
                self.note(str(item), argv=[lang])
