"""The perl, ruby, node and php front end: the few calls of a program that run commands,
evaluate code or touch files (``tables.toml`` names them), found by scanning its text and lowered
to the same items as the Python front end's (a file call by its template, as Python's are)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .tables import TABLES
from .words import c_escapes

__all__ = ["lower_foreign"]

Item = tuple[str, Any]
_FOREIGN = TABLES["foreign"]
_STRING = re.compile(_FOREIGN["string"])
_RUN, _CODE, _FILES = _FOREIGN["run"], _FOREIGN["code"], _FOREIGN["files"]
_COMMANDS: dict[str, list[str]] = _FOREIGN["commands"]
_SINKS: dict[str, str] = _FOREIGN["sinks"]
_CLOSE = {"(": ")", "{": "}", "[": "]", "<": ">"}  # qx{...}: else the same character closes
_TOKEN = re.compile(_FOREIGN["string"] + "|.", re.S)  # a string or one character


def _literals(text: str) -> list[str] | None:
    """The string literals of an argument list when every argument is one, else ``None``."""
    parts = [p.strip() for p in text.replace("[", "").replace("]", "").split(",")]
    parts = [p for p in parts if p and not re.fullmatch(r"\{[^}]*\}", p)]  # not an options hash
    if not all(_STRING.fullmatch(p) for p in parts):
        return None
    return [c_escapes(p[1:-1]) if p[0] == '"' else p[1:-1] for p in parts]


def _argument(code: str, start: int) -> str:
    """The text of a call's arguments from ``start`` (after the open bracket or keyword)."""
    depth, end = 0, start
    for m in _TOKEN.finditer(code, start):
        if m.start() - start >= 2000 or not depth and m.group() in ");\n}":
            break
        depth += (m.group() in "([{") - (depth > 0 and m.group() in ")]}")
        end = m.end()
    return code[start:end]


def lower_foreign(lang: str, code: str) -> Iterator[Item]:
    """The items the ``lang`` program ``code`` lowers to."""
    if re.search(_CODE[lang], code):
        yield ("note", "script-dynamic-code")
    read = lang != "node" or "child_process" in code
    runs = list(re.finditer(_RUN[lang], code)) if read else []
    bare = code if lang == "php" else _STRING.sub(lambda m: " " * len(m.group()), code)
    named = {m.start() for m in re.finditer(_SINKS[lang], bare)} if read else set()
    if named - {m.start() for m in runs}:  # a command runner named but not called as read
        yield ("note", "script-dynamic-command")
    for m in runs:
        token = m.group(0)
        if token.startswith(("`", "qx", "%x")):  # a command in quotes (any delimiter), run by sh
            body = code[m.end() :].partition(_CLOSE.get(token[-1], token[-1]))[0]
            args = None if re.search(r"[$#@]\{|[$@]\w", body) else [body]
        else:
            args = _literals(_argument(code, m.end()))
        if not args:
            yield ("note", "script-dynamic-command")
        else:
            yield ("shell", args[0]) if len(args) == 1 else ("argv", args)
    for m in re.finditer(_FILES[lang], code):
        yield from _file_call(m.group(m.lastindex or 0), _argument(code, m.end()))


def _file_call(name: str, argument: str) -> Iterator[Item]:
    """A call that touches a file, lowered by its template (``[foreign.commands]``)."""
    name = name if name in _COMMANDS else name.lower()  # php's names ignore case
    mode = re.match(r"\s*['\"]([<>+]+)['\"]\s*,", argument)  # perl's open(F, ">", PATH)
    argument = argument[mode.end() :] if mode else argument
    opens, template = _COMMANDS[name][0] == "open", _COMMANDS[name]
    two = "{1}" in str(template)  # a call of two paths (rename, copy, symlink)
    args = _literals(argument if opens or two else argument.split(",")[0])
    if not args or two and len(args) < 2:
        yield ("note", "script-dynamic-command")
    elif opens:  # perl's ">PATH", "+<PATH" or a mode before the path; ruby's and php's after it
        path = args[0].lstrip("<>+|")
        op = args[0][: len(args[0]) - len(path)] + (mode.group(1) if mode else "")
        op += "".join(args[1:2]) if name != "open" else ""
        yield ("write" if re.search("[>+wa]", op) else "read", path.strip() or args[0])
    else:
        template = _COMMANDS.get(f"{name} recursive" if "recursive" in argument else name, template)
        words = [w.format(*args) for w in template]
        yield ("write", words[1]) if words[0] == ">" else ("argv", words)
