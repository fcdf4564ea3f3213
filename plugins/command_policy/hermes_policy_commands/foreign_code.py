"""The perl, ruby, node and php front end: the few calls of a program that run commands,
evaluate code or touch files (``tables.toml`` names them), found by scanning its text and lowered
to the same items as the Python front end's."""

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
        yield from _file_call(m.group(0), _argument(code, m.end()))


def _file_call(token: str, argument: str) -> Iterator[Item]:
    mode = re.match(r"\s*['\"]([<>+]+)['\"]\s*,", argument)
    if mode:
        argument = argument[mode.end() :]
    args = _literals(argument.split(",")[0] if not token.startswith("open") else argument)
    if not args:
        yield ("note", "script-dynamic-command")
        return
    path = args[0]
    if token.lstrip().startswith("open") or token.startswith("fopen"):
        m = re.match(r"^([<>+|]*)\s*(.*)$", path)
        op, rest = (m.group(1), m.group(2)) if m else ("", path)
        writes = ">" in op or (mode is not None and ">" in mode.group(1)) or "+" in op
        yield ("write" if writes else "read", rest or path)
    elif (
        re.search(r"rm_rf|rm_r\b|rmtree|remove_tree|remove_dir", token)
        or ("rmSync" in token or "rmdirSync" in token)
        and "recursive" in argument
    ):
        yield ("argv", ["rm", "-rf", path])
    elif re.search(r"unlink|delete|rmdir|\brm\b|rmSync", token):
        yield ("argv", ["rm", "-f", path])
    else:
        yield ("write", path)
