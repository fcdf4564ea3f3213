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


def _literals(text: str) -> list[str] | None:
    """The string literals of an argument list when every argument is one, else ``None``."""
    parts = [p.strip() for p in text.replace("[", "").replace("]", "").split(",") if p.strip()]
    out = []
    for p in parts:
        if re.fullmatch(r"\{[^}]*\}", p):
            continue
        if not _STRING.fullmatch(p):
            return None
        out.append(c_escapes(p[1:-1]) if p[0] == '"' else p[1:-1])
    return out


def _argument(code: str, start: int) -> str:
    """The text of a call's arguments from ``start`` (after the open bracket or keyword)."""
    i, depth = start, 0
    while i < len(code) and i - start < 2000:
        c = code[i]
        if c in "\"'":
            m = _STRING.match(code, i)
            i = m.end() if m else i + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}" and depth:
            depth -= 1
        elif not depth and c in ");\n}":
            break
        i += 1
    return code[start:i]


def lower_foreign(lang: str, code: str) -> Iterator[Item]:
    """The items the ``lang`` program ``code`` lowers to."""
    if re.search(_CODE[lang], code):
        yield ("note", "script-dynamic-code")
    run = re.compile(_RUN[lang]) if lang != "node" or "child_process" in code else None
    for m in run.finditer(code) if run else ():
        token = m.group(0)
        if token in ("`",) or token.startswith(("qx", "%x")):
            end = code.find({"`": "`", "(": ")", "{": "}", "/": "/"}[token[-1]], m.end())
            body = code[m.end() : end if end > 0 else len(code)]
            dynamic = re.search(r"[$#]\{|\$\w", body)
            yield ("note", "script-dynamic-command") if dynamic else ("shell", body)
            continue
        args = _literals(_argument(code, m.end()))
        if not args:
            yield ("note", "script-dynamic-command")
        else:
            yield ("shell", args[0]) if len(args) == 1 else ("argv", args)
    for m in re.finditer(_FILES[lang], code):
        yield from _file_call(m.group(m.lastindex or 0), _argument(code, m.end()))


def _file_call(name: str, argument: str) -> Iterator[Item]:
    """A call that touches a file, lowered by its template (``[foreign.commands]``)."""
    mode = re.match(r"\s*['\"]([<>+]+)['\"]\s*,", argument)  # perl's open(F, ">", PATH)
    if mode:
        argument = argument[mode.end() :]
    opens = _COMMANDS[name][0] == "open"
    two = "{1}" in str(_COMMANDS.get(name))  # a call of two paths (rename, copy, symlink)
    args = _literals(argument if opens or two else argument.split(",")[0])
    if not args:
        yield ("note", "script-dynamic-command")
        return
    recursive = f"{name} recursive" if "recursive" in argument else name
    if two and len(args) < 2:
        yield ("note", "script-dynamic-command")
        return
    words = [w.format(*args) for w in _COMMANDS.get(recursive, _COMMANDS[name])]
    if opens:  # perl's ">PATH", "+<PATH" or a mode before the path; ruby's and php's after it
        path = words[1].lstrip("<>+|")
        op = words[1][: len(words[1]) - len(path)] + (mode.group(1) if mode else "")
        op += "".join(args[1:2]) if name != "open" else ""
        yield ("write" if re.search("[>+wa]", op) else "read", path.strip() or words[1])
    else:
        yield ("write", words[1]) if words[0] == ">" else ("argv", words)
