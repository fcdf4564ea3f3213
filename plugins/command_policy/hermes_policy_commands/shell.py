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
from collections.abc import Callable
from typing import Any

from .programs import PROGRAMS, canonical
from .unwrap import Unwrapping
from .words import UNKNOWN, Output, Redirects, ScriptReader, Simple, Via, literal, node_text, parse

__all__ = ["UNKNOWN", "Lowering", "ScriptReader", "Simple", "parse"]

MAX_DEPTH = 48  # nested re-readings (bash -c, eval, functions, substitutions)
_WORDS = frozenset({"command_name", "word", "concatenation", "string", "raw_string", "number"})
_FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1")
_EXPANDS = re.compile(rb"[$`<>]")
_LITERAL: dict[bytes, tuple[tuple[str, ...], tuple[str, ...]]] = {}
"""The words of commands without expansions or redirections, by their text."""
_GLOB = re.compile(r"[*?\[]")
_HOOKS = frozenset({"command_not_found_handle", "command_not_found_handler"})
_NAME = re.compile(r"[\w.+@%:,=/~-]+")  # a program's name as written: else it was computed


def _glued(nodes: list[Any], i: int, text: bytes, start: int) -> bool:
    r"""Whether ``nodes[i]`` and the word before it are one word tree-sitter-bash cut in two: at a
    backslash-newline, which it reads as a space (``r\<newline>m``), or after a lone ``$``, where
    it ends a word when a second ``$NAME`` is glued to it (``rm$IFS-rf$IFS/``)."""
    if i >= len(nodes):
        return False
    if nodes[i].start_byte != nodes[i - 1].end_byte:  # text: the command's, from byte start
        return text[nodes[i - 1].end_byte - start : nodes[i].start_byte - start] == b"\\\n"
    word = nodes[i - 1]
    if word.type == "command_name" and word.named_child_count:
        word = word.named_children[0]
    return bool(word.type == "concatenation" and word.children[-1].type == "$")


class Lowering(Unwrapping):
    """One reading of one command: call :meth:`read` with the text, then find the simple
    commands in :attr:`out`.

    :param read_script: reads a script file the command runs (``None``: scripts are not read).
    :param cwd: the folder the command starts in when it is not the workspace.

    A statement of each kind of syntax node is lowered by its ``visit_KIND`` method, the others
    (lists, blocks, loops, conditions) by :meth:`stmt` itself, child by child. An exception ends
    the whole reading (``policy.lower``), so the state is not restored on the way out.
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
        out = self.stmt(tree.root_node, stdin)
        self.depth -= 1
        return out

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
        visit: Callable[[Lowering, Any, Output], Output] | None = _VISITS.get(node.type)
        if visit is not None:
            return visit(self, node, stdin)
        if node.type == "variable_name":  # ((x)): its value is evaluated as arithmetic
            self.arithmetic(node_text(node))
        if node.type == "ERROR":
            raw = node_text(node).strip()
            if node.named_children and node.named_children[0].type in _WORDS and " " not in raw:
                self.run(list(literal(raw, True)), [], stdin, ())
        last: Output = ("", None)
        for child in node.named_children:
            if child.type not in _WORDS:
                last = self.stmt(child, stdin)
            else:
                self.fields(child)
        return last

    def visit_pipeline(self, node: Any, stdin: Output) -> Output:
        """Lower the statements of a pipeline: the first reads ``stdin``, each other what the
        one before it prints."""
        outer, self.in_pipeline = self.in_pipeline, True
        for child in node.named_children:
            stdin = self.stmt(child, stdin)
        self.in_pipeline = outer
        return stdin

    def visit_redirected_statement(self, node: Any, stdin: Output) -> Output:
        """Lower a statement with redirections (files, heredocs, here-strings); the line of a
        heredoc may go on after it (``cat <<EOF | sh``, ``cat <<EOF > f && rm f``)."""
        redirects: Redirects = []
        words: list[Any] = []  # the command's words tree-sitter-bash put after a heredoc's marker
        then: list[Any] = []  # what goes on after a heredoc, reading what the statement prints
        for child in node.children_by_field_name("redirect"):
            for part in child.named_children if child.type == "heredoc_redirect" else [child]:
                if part.type == "heredoc_body":  # the $(...) of an unquoted one run first
                    stdin = ("text", node_text(part))
                    self.value(part)
                elif part.type.endswith("_redirect"):
                    stdin = self.redirect(part, redirects, stdin)
                elif part.type in _WORDS:
                    words.append(part)
                elif part.type not in ("heredoc_start", "heredoc_end"):
                    then.append(part)
        body = node.child_by_field_name("body")
        if body is not None and body.type == "command":
            out = self.visit_command(body, stdin, redirects, words)
        else:  # a list, a pipeline, a block: the redirections apply where its commands end
            out = self.stmt(body, stdin) if body is not None else ("", None)
            self.run([], redirects, stdin, ())
        for part in then:
            out = self.stmt(part, out)
        return out

    def redirect(self, node: Any, redirects: Redirects, stdin: Output) -> Output:
        """Record one redirection; the answer is the command's stdin afterwards."""
        if node.type == "herestring_redirect":
            return ("text", " ".join(self.value(c) for c in node.named_children) + "\n")
        op = next((node_text(c) for c in node.children if not c.is_named), ">")
        dest = node.child_by_field_name("destination")
        target = self.value(dest) if dest is not None else UNKNOWN
        if op in ("<&", ">&", "&>", "&>>") and re.fullmatch(r"[0-9-]+", target):
            return stdin
        redirects.append((op, target))
        return (self.files.get(target) or ("file", target)) if op == "<" else stdin

    def visit_variable_assignment(self, node: Any, stdin: Output = ("", None)) -> Output:
        """Record variable assignments (an ``export`` each, as the shell would)."""
        for item in [node] if node.type == "variable_assignment" else node.named_children:
            name, value = self.assignment(item)
            self.vars[name] = value
            self.out.append(Simple(["export", f"{name}={value}"], cwd=self.cwd, via=("=",)))
        return ("", None)

    visit_variable_assignments = visit_variable_assignment

    def visit_declaration_command(self, node: Any, stdin: Output) -> Output:
        """Lower ``export``, ``declare``, ``local``, ``unset`` and the like."""
        argv = [node_text(node.children[0])]
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.visit_variable_assignment(child)
                argv.append(name := node_text(child.child_by_field_name("name") or child))
                if any(a[:1] == "-" and "n" in a for a in argv[1:]):  # a name reference
                    self.vars[name] = UNKNOWN
                if any(a[:1] == "-" and "i" in a for a in argv[1:]):  # an integer: arithmetic
                    self.evaluated(node_text(child.child_by_field_name("value") or child))
            else:
                argv += self.fields(child)
        if len(argv) > 1 or argv[0] in ("export", "declare", "typeset", "set"):
            self.out.append(Simple(argv, cwd=self.cwd))
        return ("", None)

    visit_unset_command = visit_declaration_command

    def visit_function_definition(self, node: Any, stdin: Output) -> Output:
        """Record a function the command defines (its body is lowered where it is called)."""
        name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        if name is not None and body is not None:
            self.funcs[node_text(name)] = body
            if node_text(name) in _HOOKS:  # the shell calls it itself: judged as if called
                self.stmt(body)
        return ("", None)

    def visit_for_statement(self, node: Any, stdin: Output) -> Output:
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

    def visit_command(
        self, node: Any, stdin: Output, redirects: Redirects | None = None, more: Any = ()
    ) -> Output:
        """Lower one command node: its assignments, argv and redirections (to ``redirects``),
        and ``more`` words of it (syntax nodes)."""
        redirects = [] if redirects is None else redirects
        text = node.text
        known = None if more else _LITERAL.get(text)  # the words known from the text alone
        if known is not None:
            self.out += [Simple(["export", item], cwd=self.cwd, via=("=",)) for item in known[0]]
            return self.run(list(known[1]), redirects, stdin, ())
        env, argv = [], []
        children = node.named_children + list(more)
        i = 0
        while i < len(children):
            child, i = children[i], i + 1
            kind = child.type
            if kind == "variable_assignment":
                env.append("=".join(self.assignment(child)))
            elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                stdin = self.redirect(child, redirects, stdin)
            elif _glued(children, i, text, node.start_byte):
                end = i + 1
                while _glued(children, end, text, node.start_byte):
                    end += 1
                argv += self.reread("".join(node_text(c) for c in children[i - 1 : end]))
                i = end
            elif kind == "command_name":
                argv += self.fields(child.named_children[0]) if child.named_child_count else []
            else:
                argv += self.fields(child)
        if not more and _EXPANDS.search(text) is None and len(_LITERAL) < 4096:
            _LITERAL[text] = (tuple(env), tuple(argv))
        self.out += [Simple(["export", item], cwd=self.cwd, via=("=",)) for item in env]
        return self.run(argv, redirects, stdin, ())

    def run(self, argv: list[str], redirects: Redirects, stdin: Output, via: Via) -> Output:
        """Lower one simple command (and what it runs); the answer is what it prints."""
        self.budget -= 1
        if self.budget <= 0:
            return self._spent()
        if not argv:
            if redirects:
                self.out.append(Simple([], redirects, via, cwd=self.cwd))
            return ("", None)
        name, base = argv[0], argv[0].rpartition("/")[2]
        text = stdin[1] if stdin[0] == "text" else None
        if UNKNOWN in name or _GLOB.search(name) or not _NAME.fullmatch(name):
            self.out.append(Simple(argv, redirects, via, notes=("dynamic-command",), cwd=self.cwd))
            return ("other", None)
        if base in self.aliases:  # read once: an alias that names itself is the program
            return self.nested(self.aliases.pop(base) + " " + shlex.join(argv[1:]), via)
        if base in self.funcs and "/" not in name:
            return self.call(base, argv, stdin)
        if self.links:
            argv = [argv[0]] + [self.linked(a) for a in argv[1:]]
        base = canonical(base)
        spec = PROGRAMS.get(base, {})
        notes: tuple[str, ...] = ("reads-input",) if stdin[0] else ()  # a pipe, file or text
        if spec.get("local_tools") and self.local_tool(argv[1:]):
            notes += ("local-tool",)
        if any(map(self.files.get, spec.get("manifests", ()))):
            notes += ("written-manifest",)
        self.out.append(Simple(argv, redirects, via, text, notes, cwd=self.cwd))
        if spec.get("fills"):
            self.filled(argv)
        out = self.unwrap(base, argv, stdin, via)
        return self.redirected_output(redirects, out) if redirects else out

    def redirected_output(self, redirects: Redirects, out: Output) -> Output:
        """Record the files a command's output goes to; the answer is what it still prints."""
        written = [target for op, target in redirects if op != "<"]  # as the rules read them
        content = out if out[0] in ("text", "download") else ("other", None)
        self.files.update((posixpath.normpath(target), content) for target in written)
        return ("", None) if written else out

    def call(self, name: str, argv: list[str], stdin: Output) -> Output:
        """Lower a call of a function the command defined (a recursion piped is a fork bomb)."""
        if name in self.calls or len(self.calls) > 16:
            if name not in self.calls:
                self.note("uncheckable")
            elif self.in_pipeline:
                self.note("fork-bomb", argv=[name])
            return ("other", None)
        saved, self.args = self.args, argv[1:]
        self.calls.append(name)
        out = self.stmt(self.funcs[name], stdin)
        self.calls.pop()
        self.args = saved
        return out

    def nested(self, text: str, via: Via, stdin: Output = ("", None)) -> Output:
        """Read ``text`` as shell code run by a wrapper (``bash -c``, ``eval``, ``ssh``), whose
        commands read ``stdin``."""
        start = len(self.out)
        out = self.read(text, stdin)
        for simple in self.out[start:]:
            simple.via = via + simple.via
        return out


_VISITS = {name[6:]: method for name, method in vars(Lowering).items() if name[:6] == "visit_"}
"""The method that lowers each kind of statement (``visit_KIND``), by the kind."""
