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

import posixpath
import re
import shlex
from typing import Any

from .programs import PROGRAMS
from .unwrap import Unwrapping
from .words import (
    MAX_VALUE,
    UNKNOWN,
    Arguments,
    Output,
    ScriptReader,
    Simple,
    braces,
    dangling,
    node_text,
    parse,
    unescape,
)

__all__ = ["UNKNOWN", "Lowering", "ScriptReader", "Simple", "parse"]

MAX_DEPTH = 48  # nested re-readings (bash -c, eval, functions, substitutions)
_WORD_NODES = frozenset({"word", "string", "raw_string", "concatenation", "number"})
_WORDS = frozenset({"command_name", "word", "concatenation", "string", "raw_string"})
_FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1")
_EXPANDS = re.compile(rb"[$`<>]")
_LITERAL: dict[bytes, tuple[tuple[str, ...], tuple[str, ...]]] = {}
"""The words of commands without expansions or redirections, by their text."""
_GLOB = re.compile(r"[*?\[]")


def _glued(nodes: list[Any], i: int) -> bool:
    """Whether ``nodes[i]`` is glued to the word before it, which ends with a lone ``$``."""
    return (
        i < len(nodes) and dangling(nodes[i - 1]) and nodes[i].start_byte == nodes[i - 1].end_byte
    )


class Lowering(Unwrapping):
    """One reading of one command: call :meth:`read` with the text, then find the simple
    commands in :attr:`out`.

    :param read_script: reads a script file the command runs (``None``: scripts are not read).
    :param cwd: the folder the command starts in when it is not the workspace.
    """

    # --- entry points -------------------------------------------------------------------

    def read(self, text: str, stdin: Output = ("", None)) -> Output:
        """Parse ``text`` as shell code and lower every command in it, each reading ``stdin``;
        the answer is what the last statement prints."""
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
            return self.stmt(tree.root_node, stdin)
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
            return self.piped(node.named_children, stdin)
        if kind in ("variable_assignment", "variable_assignments"):
            self.assignments(node)
            return ("", None)
        if kind in ("declaration_command", "unset_command"):
            return self.declaration(node)
        if kind == "ERROR":
            raw = node_text(node).strip()
            if node.named_children and node.named_children[0].type in _WORDS and " " not in raw:
                self.run([unescape(w) for w in braces(raw)], [], stdin, ())
        if kind == "function_definition":
            name = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if name is not None and body is not None:
                self.funcs[node_text(name)] = body
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

    def piped(self, nodes: list[Any], stdin: Output) -> Output:
        """Lower the statements of a pipeline: the first reads ``stdin``, each other what the
        one before it prints."""
        out = stdin
        outer, self.in_pipeline = self.in_pipeline, True
        try:
            for child in nodes:
                out = self.stmt(child, out)
        finally:
            self.in_pipeline = outer
        return out

    def redirected(self, node: Any, stdin: Output) -> Output:
        """Lower a statement with redirections (files, heredocs, here-strings); a heredoc's
        command may go on in a pipeline (``cat <<EOF | sh``)."""
        redirects: list[tuple[str, str]] = []
        for child in node.children_by_field_name("redirect"):
            stdin = self.redirect(child, redirects, stdin)
        body = node.child_by_field_name("body")
        pending, self.pending = self.pending, None
        if body is not None and body.type == "command":
            out = self.command(body, redirects, stdin)
        else:  # a list, a pipeline, a block: the redirections apply where its commands end
            out = self.stmt(body, stdin) if body is not None else ("", None)
            if redirects:
                self.out.append(Simple([], redirects, cwd=self.cwd))
        return self.stmt(pending, out) if pending is not None else out

    def redirect(self, node: Any, redirects: list[tuple[str, str]], stdin: Output) -> Output:
        """Record one redirection; the answer is the command's stdin afterwards."""
        if node.type == "heredoc_redirect":
            body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
            for c in node.named_children:
                if c.type in ("pipeline", "command"):
                    self.pending = c
            return ("text", node_text(body) if body is not None else "")
        if node.type == "herestring_redirect":
            words = [self.value(c) for c in node.named_children]
            return ("text", " ".join(words) + "\n")
        op = next((node_text(c) for c in node.children if not c.is_named), ">")
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
        for item in [node] if node.type == "variable_assignment" else node.named_children:
            name, value = self.assignment(item)
            self.vars[name] = value
            self.out.append(Simple(["export", f"{name}={value}"], cwd=self.cwd, via=("=",)))

    def assignment(self, node: Any) -> tuple[str, str]:
        """The name and value of one ``NAME=value`` (a value too long to follow is unknown)."""
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        text = self.value(value) if value is not None else ""
        return node_text(name) if name else "?", text if len(text) <= MAX_VALUE else UNKNOWN

    def declaration(self, node: Any) -> Output:
        """Lower ``export``, ``declare``, ``local``, ``unset`` and the like."""
        head = node_text(node.children[0])
        argv = [head]
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignments(child)
                argv.append(node_text(child.child_by_field_name("name") or child))
            else:
                argv += self.fields(child)
        if len(argv) > 1 or head in ("export", "declare", "typeset", "set"):
            self.out.append(Simple(argv, cwd=self.cwd))
        return ("", None)

    def for_loop(self, node: Any) -> Output:
        """Lower a ``for`` loop: its body once per known value (or once, unknown)."""
        var, body = node.child_by_field_name("variable"), node.child_by_field_name("body")
        values = [f for child in node.children_by_field_name("value") for f in self.fields(child)]
        for value in values if 0 < len(values) <= 4 else [UNKNOWN]:
            if var is not None:
                self.vars[node_text(var)] = value
            if body is not None:
                self.stmt(body)
        return ("other", None)

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
                env.append("=".join(self.assignment(child)))
            elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                stdin = self.redirect(child, redirects, stdin)
            elif _glued(children, i):
                end = i + 1
                while _glued(children, end):
                    end += 1
                argv += self.reread("".join(node_text(c) for c in children[i - 1 : end]))
                i = end
            elif kind == "command_name":
                argv += self.fields(child.named_children[0]) if child.named_child_count else []
            else:
                argv += self.fields(child)
        return tuple(env), tuple(argv), stdin

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
        if UNKNOWN in name or _GLOB.search(name):
            self.out.append(Simple(argv, redirects, via, notes=("dynamic-command",), cwd=self.cwd))
            return ("other", None)
        if base in self.aliases:  # read once: an alias that names itself is the program
            return self.nested(self.aliases.pop(base) + " " + shlex.join(argv[1:]), via)
        if base in self.funcs and "/" not in name:
            return self.call(base, argv, stdin)
        if self.links:
            argv = [argv[0]] + [self.linked(a) for a in argv[1:]]
        spec = PROGRAMS.get(base, {})
        notes: tuple[str, ...] = ("reads-input",) if stdin[0] else ()  # a pipe, file or text
        if any(map(self.files.get, spec.get("manifests", ()))):
            notes += ("written-manifest",)
        self.out.append(Simple(argv, redirects, via, text, notes, cwd=self.cwd))
        if spec.get("fills"):
            self.filled(Arguments(argv))
        out = self.unwrap(base, argv, stdin, via)
        return out if not redirects else self.redirected_output(redirects, out)

    def redirected_output(self, redirects: list[tuple[str, str]], out: Output) -> Output:
        """Record the files a command's output goes to; the answer is what it still prints."""
        written = [target for op, target in redirects if op != "<"]  # as the rules read them
        for target in written:
            kept = out[0] in ("text", "download")
            self.files[posixpath.normpath(target)] = out if kept else ("other", None)
        return ("", None) if written else out

    def filled(self, args: Arguments) -> None:
        """Record the files a command gives new content (and the links ``ln -s`` makes)."""
        content = ("download" if args.spec["writes"] == "download" else "other", None)
        for path in args.written():
            self.files[posixpath.normpath(path)] = content
        if args.program == "ln" and args.has("-s") and args.positional[1:]:
            self.links[args.positional[-1].strip("/").removeprefix("./")] = args.positional[-2]

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

    def nested(self, text: str, via: tuple[str, ...], stdin: Output = ("", None)) -> Output:
        """Read ``text`` as shell code run by a wrapper (``bash -c``, ``eval``, ``ssh``), whose
        commands read ``stdin``."""
        start = len(self.out)
        out = self.read(text, stdin)
        for simple in self.out[start:]:
            simple.via = via + simple.via
        return out
