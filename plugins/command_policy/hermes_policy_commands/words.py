"""The shell's words: each word of a command expanded as far as it can be known statically
(quotes, escapes, braces, variables, ``${...}``, substitutions), and :class:`Simple`, one program
the command would start, with its words.

What cannot be known is written as :data:`UNKNOWN` inside a word.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from .programs import PROGRAMS, canonical

__all__ = ["UNKNOWN", "Arguments", "Output", "Simple", "Words", "c_escapes", "node_text", "parse"]

UNKNOWN = "\x00"
"""Stands for a part of a word that cannot be known before the command runs."""
MAX_VALUE = 4096  # a variable longer than this is unknown (the doubling trick stops here)
BUDGET = 60_000  # syntax nodes and emitted commands per decision
MAX_FIELDS = 64  # brace expansion and xargs fields
Output = tuple[str, str | None]  # (kind, text): kind "", "text", "download", "decode", "other"
_NAMES = re.compile(r"(?<![\w#])\$?\{?([A-Za-z_]\w*)")  # the variables of arithmetic
_SAFE_WORD = re.compile(r"[\w@%+=:,./~^-]+")
_EXPANSION = re.compile(r"(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*])(?:(:?[-=?+]|%%?|##?)(.*))?")
_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "e": "\x1b", "a": "\a", "\\": "\\", "'": "'",
              '"': '"'}  # fmt: skip
ScriptReader = Callable[[str], "str | None"]
Redirects = list[tuple[str, str]]  # (operator, target): (">", "out.txt")
Via = tuple[str, ...]  # the programs a command was reached through


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
    redirects: Redirects = field(default_factory=list)
    via: Via = ()
    stdin: str | None = None
    notes: tuple[str, ...] = ()
    cwd: str | None = None

    def render(self) -> str:
        """The command as one line, ``?`` for unknown parts (shown to people, and the target
        an approval is remembered under)."""
        words = [_quote(w) for w in self.argv] + [f"{op} {_quote(t)}" for op, t in self.redirects]
        text = " ".join(words) or "(" + ", ".join(self.notes) + ")"
        return text if len(text) <= 300 else text[:297] + "..."


class Arguments:
    """The words of a simple command as its program reads them: its options (the values of the
    ones :data:`~.programs.PROGRAMS` says take one skipped), its operands, the paths it writes."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.program = canonical(argv[0].rpartition("/")[2]) if argv else ""
        self.spec: dict[str, Any] = PROGRAMS.get(self.program, {})
        values = self.spec.get("values", ())
        self.options: list[str] = []
        self.positional: list[str] = []
        skip, ended = False, False
        for a in argv[1:]:
            if skip:
                skip = False
            elif ended or a[:1] != "-" or a == "-":
                self.positional.append(a)
            elif a == "--":
                ended = True
            else:
                self.options.append(a)
                skip = a in values
        self.flags = "".join(o[1:] for o in self.options if o[1] != "-")

    def has(self, wanted: str) -> bool:
        """Whether the option ``wanted`` is given (``-r`` in ``-rf``, ``--force=x``, ``--forc``)."""
        if wanted.startswith("--"):  # --force=x, or --forc: a prefix of 5 characters or more
            names = [o.partition("=")[0] for o in self.options]
            exact = self.spec.get("exact", ())  # names that are options of their own
            return any(
                n == wanted or len(n) >= 4 and wanted.startswith(n) and n not in exact
                for n in names
            )
        if len(wanted) == 2:  # -e, -eVALUE, -xe: a letter of the flags
            return wanted[1] in self.flags
        return wanted in self.options or any(o.startswith(wanted + "=") for o in self.options)

    def written(self) -> list[str]:
        """The paths the program writes, as the ``writes`` of its entry in
        :data:`~.programs.PROGRAMS` says."""
        how = str(self.spec.get("writes", ""))
        if how in ("all", "after-first"):
            return self.positional[how == "after-first" :]
        if how == "last" and self.positional[1:] or how == "last-or-only" and self.positional:
            return self.positional[-1:]
        if how == "in-place" and self.has("-i"):
            return self.positional[1:]  # the first is the script
        if how.endswith("="):
            return [a[len(how) :] for a in self.argv[1:] if a.startswith(how)]
        if how.startswith("-"):  # the value of an option: -o FILE
            return [v for a, v in zip(self.argv, self.argv[1:], strict=False) if a == how]
        if how == "download":
            return _saved(self.program, self.argv[1:])
        return []


def _saved(program: str, args: list[str]) -> list[str]:
    """The file ``curl`` or ``wget`` saves a download to (none when it prints it)."""
    url = next((u for u in args if "://" in u), "")
    out = (posixpath.basename(url) or "index.html") if program == "wget" else None
    for i, a in enumerate(args):
        if program == "curl" and re.fullmatch(r"-[a-zA-Z]*O|--remote-name", a):
            out = posixpath.basename(url) or UNKNOWN
        elif re.fullmatch(r"-[a-zA-Z]*[oO]|--output(?:-document)?", a) and args[i + 1 :]:
            out = args[i + 1]
        elif re.fullmatch(r"-[a-zA-Z]*[oO]\S+", a):
            out = re.sub(r"^-[a-zA-Z]*?[oO]", "", a)
    return [out] if out is not None and out != "-" else []


def _quote(word: str) -> str:
    return word if _SAFE_WORD.fullmatch(word) else shlex.quote(word).replace(UNKNOWN, "?")


@cache
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse(text: str) -> Any:
    """The tree-sitter syntax tree of ``text``."""
    return _parser().parse(text.encode("utf-8", "surrogatepass"))


def node_text(node: Any) -> str:
    """The source text of a syntax node."""
    return str(node.text.decode("utf-8", "replace"))


def unescape(word: str) -> str:
    """``word`` with its backslash escapes undone (a backslash-newline joins lines)."""
    return re.sub(r"\\(?:\n|(.))", r"\1", word) if "\\" in word else word


@lru_cache(maxsize=4096)
def literal(raw: str, split: bool) -> tuple[str, ...]:
    """The fields of a word without expansions (braces and escapes only)."""
    return tuple(unescape(w) for w in (braces(raw) if split and "{" in raw else [raw]))


def c_escapes(text: str) -> str:
    r"""``text`` with its C escapes undone (``\n``, ``\x72``, ``\101``; an unknown one stays):
    ``$'...'`` strings, ``printf`` formats, the double-quoted strings of other languages."""

    def one(m: re.Match[str]) -> str:
        hexa, octal, other = m.groups()
        if other is not None:
            return _C_ESCAPES.get(other, "\\" + other)
        return chr(min(int(hexa[1:], 16), 0x10FFFF) if hexa else int(octal, 8) % 256)

    hexa = r"x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}"  # \x72, \u0072, \U00000072
    return re.sub(rf"\\(?:({hexa})|([0-7]{{1,3}})|(.))", one, text)


def braces(word: str) -> list[str]:
    """The words a brace expansion (``a{b,c}``) makes, :data:`UNKNOWN` past the bound."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if not m:
        return [word]
    out: list[str] = []
    for part in m.group(1).split(","):
        out += braces(word[: m.start()] + part + word[m.end() :])
        if len(out) > MAX_FIELDS:
            return [UNKNOWN]
    return out


class Words:
    """The state of one reading of one command, and the expansion of its words (the base of
    :class:`~.shell.Lowering`, whose parameters these are)."""

    def __init__(self, read_script: ScriptReader | None = None, cwd: str | None = None) -> None:
        self.read_script = read_script
        self.out: list[Simple] = []
        self.vars: dict[str, str] = {"HOME": "~", "IFS": " \t\n", "HERMES_HOME": "~/.hermes",
                                     "PWD": cwd or "."}  # fmt: skip
        self.funcs: dict[str, Any] = {}
        self.aliases: dict[str, str] = {}
        self.files: dict[str, Output] = {}
        self.cwd = cwd
        self.args: list[str] = []
        self.calls: list[str] = []
        self.depth = 0
        self.budget = BUDGET
        self.in_pipeline = False
        self.links: dict[str, str] = {}
        self.decoded_texts: set[str] = set()
        self.modules: set[str] = set()
        self.folders: list[str] = [""]
        self.dumped = Simple([])  # the last environment dump (env | grep LANG filters it)

    def note(self, *notes: str, argv: list[str] | None = None) -> None:
        """Record what the reading found that no argv shows."""
        self.out.append(Simple(argv or [], notes=notes, cwd=self.cwd))

    # the statements, the simple commands and the shell code run by wrappers: shell.Lowering
    stmt: Callable[[Any, Output], Output]
    run: Callable[[list[str], Redirects, Output, Via], Output]
    redirect: Callable[[Any, Redirects, Output], Output]
    nested: Callable[..., Output]  # (text, via, stdin=("", None))

    def assignment(self, node: Any) -> tuple[str, str]:
        """The name and value of one ``NAME=value`` (a value too long to follow is unknown)."""
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is not None and name.type == "subscript":  # a[$(id)]=1 runs what its index holds
            self.value(name)
            self.evaluated(node_text(name.child_by_field_name("index") or name)[:256])
        text = self.value(value) if value is not None else ""
        return node_text(name) if name else "?", text if len(text) <= MAX_VALUE else UNKNOWN

    def value(self, node: Any) -> str:
        """The word as one string (no field splitting)."""
        return " ".join(self.fields(node, split=False))

    def fields(self, node: Any, split: bool = True) -> list[str]:
        """The fields a word expands into."""
        if self.calls and node_text(node) in ('"$@"', '"${@}"'):
            return list(self.args)  # one field per argument of the function
        kind = node.type
        if kind == "word" or (
            kind == "concatenation" and all(c.type == "word" for c in node.named_children)
        ):
            return list(literal(node_text(node), split))  # words hold no expansion (a$ is literal)
        out: list[str] = [""]
        ifs = "[" + re.escape(self.vars.get("IFS", " ")) + "]+"
        for piece, splittable in self.pieces(node):
            parts = re.split(ifs, piece) if split and splittable else [piece]
            out[-1] += parts[0]
            out += parts[1:]
        return [w for w in out if w] if split else out[:1]

    def pieces(self, node: Any) -> Iterator[tuple[str, bool]]:
        """Each part of a word with whether the shell splits it into fields."""
        kind = node.type
        if kind == "concatenation":
            for child in node.named_children:
                yield from self.pieces(child)
        elif kind in ("word", "number", "variable_name", "brace_expression"):
            yield unescape(node_text(node)), False  # a brace expression is {1..9}: no escapes
        elif kind == "raw_string":
            yield node_text(node)[1:-1], False
        elif kind == "ansi_c_string":
            yield c_escapes(node_text(node)[2:-1]), False
        elif kind in ("string", "translated_string"):
            yield "".join(self.string(node)), False
        elif kind == "simple_expansion":
            yield self.variable(node_text(node)[1:]), True
        elif kind == "expansion":
            yield self.expansion(node), True
        elif kind in ("command_substitution", "process_substitution"):
            yield self.substitution(node), kind == "command_substitution"
        else:
            if kind in ("arithmetic_expansion", "subscript"):  # the variables' values run too
                self.evaluated(node_text(node)[3:-2] if kind[0] == "a" else node_text(node))
            for child in node.named_children:  # $((...)) and the like: what runs inside them
                self.value(child)
            yield UNKNOWN, False

    def evaluated(self, text: str) -> None:
        """Arithmetic text (``$((...))``, an array index, ``let``'s words): each variable in it
        is evaluated as arithmetic in turn (:meth:`arithmetic`)."""
        for name in _NAMES.findall(text):
            self.arithmetic(name)

    def arithmetic(self, name: str) -> None:
        """A variable read as arithmetic: its value is evaluated as arithmetic in turn, so the
        ``$(...)`` of an array index in it runs (``x='a[$(id)]'; echo $((x))``); one whose value
        is unknown is noted."""
        value = self.vars.get(name, "0")  # unset: 0 (what the command sets is followed)
        if UNKNOWN in value:
            self.note("computed-arithmetic", argv=["((", name, "))"])
        elif "$(" in value or "`" in value:
            self.nested(": " + value, ("((",))

    def string(self, node: Any) -> Iterator[str]:
        """The parts of a double-quoted string, expanded, and the newlines between them (which
        tree-sitter-bash leaves out of every part); a backslash-newline joins lines."""
        text, end = node.text, 1
        for child in node.named_children:
            yield text[end : child.start_byte - node.start_byte].decode("utf-8", "replace")
            end = child.end_byte - node.start_byte
            if child.type == "string_content":
                yield re.sub(r"\\([$`\"\\])|\\\n", r"\1", node_text(child))
            else:
                yield self.value(child)
        yield text[end:-1].decode("utf-8", "replace")

    def variable(self, name: str) -> str:
        """The value of a variable or positional parameter (:data:`UNKNOWN` when unknown)."""
        if name.isdigit():
            return self.args[int(name) - 1] if 0 < int(name) <= len(self.args) else UNKNOWN
        if name in ("@", "*"):
            return " ".join(self.args) if self.calls else UNKNOWN
        return self.vars.get(name, UNKNOWN)

    def expansion(self, node: Any) -> str:
        """The value of a ``${...}`` expansion (defaults, prefix and suffix removal)."""
        for child in node.named_children:  # what runs inside it, in a pattern too (${x#$(id)})
            if child.type == "regex" or "`" in node_text(child):  # ${x:=`id`} in a string
                self.reread(node_text(child))
            else:
                self.value(child)
        m = _EXPANSION.fullmatch(node_text(node)[2:-1])
        if node_text(node).endswith("@P}"):  # a prompt expansion runs the $(...) of the value
            self.arithmetic(node_text(node)[2:-3].lstrip("!#"))
        if not m or m.group(1):
            return UNKNOWN
        value = self.variable(m.group(2))
        op, arg = m.group(3), m.group(4) or ""
        if op in ("-", ":-", "=", ":="):  # the default, when known, then what cannot be known
            known = arg if "$" not in arg and "`" not in arg else UNKNOWN
            return known + UNKNOWN if value == UNKNOWN else value
        if op in ("%", "%%", "#", "##") and "*" not in arg:  # a suffix or a prefix removed
            return value.removesuffix(arg) if op[0] == "%" else value.removeprefix(arg)
        return value if not op or op in ("?", ":?", "%", "%%", "#", "##") else UNKNOWN

    def substitution(self, node: Any) -> str:
        """Lower a ``$(...)``, ``<(...)`` or ``>(...)`` (whose commands read a pipe); the answer is
        its text or a file name."""
        out: Output = ("other", None)
        outer, self.in_pipeline = self.in_pipeline, False
        text = node_text(node)
        if text[:1] == "`" and "\\`" in text:  # `echo \`id\``: a substitution nested in it
            self.note("uncheckable")
        stdin: Output = ("other", None) if text[:1] == ">" else ("", None)  # >(...)
        for child in node.named_children:
            if child.type == "file_redirect":  # $(< FILE) reads FILE, as cat would
                redirects: Redirects = []
                out = self.run(["cat"], redirects, self.redirect(child, redirects, stdin), ())
            else:
                out = self.stmt(child, stdin)
        self.in_pipeline = outer
        if node.type == "process_substitution":
            name = f"/dev/fd/{60 + len(self.files)}"
            self.files[name] = out
            return name
        return out[1].rstrip("\n") if out[0] == "text" and out[1] is not None else UNKNOWN

    def reread(self, word: str) -> list[str]:
        """The fields of a word tree-sitter-bash cut at the ``$`` of a ``$NAME`` glued to it
        (``rm$IFS-rf$IFS/``), or of a pattern it does not parse (``${x#$(id)}``): the text read
        again with every ``$NAME`` braced."""
        tree = parse(": " + re.sub(r"\$([A-Za-z_]\w*|[0-9@*#?$!-])", r"${\1}", word))
        found = tree.root_node.named_children[:1]
        if tree.root_node.has_error or not found or found[0].type != "command":
            return [UNKNOWN]
        return [f for child in found[0].named_children[1:] for f in self.fields(child)]
