"""Reading the state a command's shell left: bash's ``export -p`` output, parsed without running
anything (``declare -x NAME="value"``, ``$'...'`` strings, a bare ``NAME``)."""

from __future__ import annotations

import os
import re

SKIPPED_VARIABLES = frozenset({"SHLVL", "_", "PWD", "BASH_ENV", "__HERMES_STATE"})
"""Variables the shell sets for itself, or hermes for one command: never carried over."""

_DECLARE = re.compile(rb"(?:declare -[A-Za-z]*x[A-Za-z]*|export) ([A-Za-z_][A-Za-z0-9_]*)")
_ANSI_C = re.compile(
    rb"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.S
)
_ANSI_SIMPLE = {
    b"n": b"\n", b"t": b"\t", b"r": b"\r", b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v",
    b"e": b"\x1b", b"E": b"\x1b", b"\\": b"\\", b"'": b"'", b'"': b'"', b"?": b"?",
}  # fmt: skip


def _ansi_c(body: bytes) -> bytes:
    """Decode the inside of a bash ``$'...'`` string."""

    def one(match: re.Match[bytes]) -> bytes:
        code = match.group(1)
        head = code[:1]
        try:
            if head == b"x":
                return bytes([int(code[1:], 16)])
            if head in (b"u", b"U"):
                return chr(int(code[1:], 16)).encode("utf-8", "surrogateescape")
            if head in b"01234567":
                return bytes([int(code, 8) & 0xFF])
        except (ValueError, OverflowError):
            return code
        if head == b"c" and len(code) == 2:
            return bytes([code[1:2].upper()[0] ^ 0x40])
        return _ANSI_SIMPLE.get(code, b"\\" + code)

    return _ANSI_C.sub(one, body)


def _parse_exports(data: bytes) -> dict[str, str]:
    """Parse bash's ``export -p`` output (``declare -x NAME="value"``, ``NAME=$'...'`` for
    values with control characters, a bare ``NAME`` for one exported but never set)."""
    env: dict[str, str] = {}
    i, n = 0, len(data)
    while i < n:
        match = _DECLARE.match(data, i)
        if match is None:
            end = data.find(b"\n", i)
            i = n if end < 0 else end + 1
            continue
        name = os.fsdecode(match.group(1))
        i = match.end()
        if data[i : i + 1] != b"=":
            end = data.find(b"\n", i)
            i = n if end < 0 else end + 1
            continue
        i += 1
        if data[i : i + 1] == b'"':
            i += 1
            value = bytearray()
            while i < n and data[i] != 0x22:
                if data[i] == 0x5C and i + 1 < n and data[i + 1] in b'"\\$`':
                    value.append(data[i + 1])
                    i += 2
                else:
                    value.append(data[i])
                    i += 1
            i += 1
            raw = bytes(value)
        elif data.startswith(b"$'", i):
            end = i + 2
            while end < n and data[end] != 0x27:
                end += 2 if data[end] == 0x5C else 1
            raw = _ansi_c(data[i + 2 : end])
            i = end + 1
        else:
            end = data.find(b"\n", i)
            end = n if end < 0 else end
            raw, i = data[i:end], end
        if name not in SKIPPED_VARIABLES:
            env[name] = os.fsdecode(raw)
    return env
