"""The ``.env`` file of a hermes home: ``KEY=VALUE`` lines read into the environment (every value
a secret), and updated in place."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from hermes_runtime.secrets import mark_secret

from .errors import ConfigError, ConfigWarning, one_line
from .files import _atomic_write
from .validation import ENV_VARS

_DOTENV_KEY = r"[A-Za-z_][A-Za-z0-9_]*"


_warned: set[str] = set()
"""The problems already warned about (once per process each)."""


def load_dotenv(path: Path, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Read ``KEY=VALUE`` lines from a .env file and return them.

    Each key is put into ``environ`` (default ``os.environ``) only when it is not already there,
    so the real environment wins. Every key is marked as a secret variable and every value (but
    those of the ``HERMES_*`` settings in :data:`ENV_VARS`) as a secret value
    (``hermes_runtime.secrets.mark_secret``). A missing file gives ``{}``. A malformed line is
    skipped with a :class:`ConfigWarning` naming the file and line (once per process, never the
    line's content, which may be a secret); every other line is still read. A file that cannot
    be read raises ConfigError.
    """
    import warnings

    env = os.environ if environ is None else environ
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {one_line(exc)}") from exc
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parsed = _parse_dotenv_line(line)
        if parsed is None:
            continue
        if isinstance(parsed, str):
            problem = f"{path}:{number}: {parsed}; the line is ignored"
            if problem not in _warned:
                _warned.add(problem)
                warnings.warn(problem, ConfigWarning, stacklevel=2)
            continue
        key, value = parsed
        values[key] = value
    for key, value in values.items():
        # Every variable of the file is kept out of commands; every value is redacted, except
        # those of hermes' own settings (HERMES_MODEL=...), which are no secrets and would
        # otherwise blank ordinary words out of tool results.
        setting = key in ENV_VARS or key == "HERMES_HOME"
        mark_secret(key, None if setting else value)
        if key not in env:
            env[key] = value
        elif not setting:
            mark_secret(value=env[key])
    return values


def write_dotenv(path: Path, updates: Mapping[str, str]) -> None:
    """Set ``updates`` in a .env file, keeping its other lines; the file is written atomically
    and readable by its owner only (mode 600), since it holds secrets."""

    for key, value in updates.items():
        if not re.fullmatch(_DOTENV_KEY, key):
            raise ConfigError(f"{path}: invalid variable name {key!r}")
        if "\n" in value or "\r" in value:
            raise ConfigError(f"{path}: the value of {key} must be one line")
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        lines = []
    pending = dict(updates)
    out = []
    for line in lines:
        parsed = _parse_dotenv_line(line)
        if isinstance(parsed, tuple) and parsed[0] in pending:
            key = parsed[0]
            out.append(f"{key}={_quote_dotenv(pending.pop(key))}")
        else:
            out.append(line)
    out.extend(f"{key}={_quote_dotenv(value)}" for key, value in pending.items())
    for key, value in updates.items():
        mark_secret(key, value)
    _atomic_write(path, "\n".join(out) + "\n", mode=0o600)


def _quote_dotenv(value: str) -> str:
    if value and all(c.isalnum() or c in "-_.:/+=@,%" for c in value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _parse_dotenv_line(line: str) -> tuple[str, str] | str | None:
    """Return (key, value), None for a blank or comment line, or a problem description."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    if stripped.startswith("export") and stripped[6:7].isspace():
        stripped = stripped[6:].lstrip()
    key, sep, rest = stripped.partition("=")
    key = key.rstrip()
    if not sep or not re.fullmatch(_DOTENV_KEY, key):
        return "malformed line (expected KEY=VALUE)"
    rest = rest.lstrip()
    if rest[:1] in ("'", '"'):
        quote = rest[0]
        value, end = _read_quoted(rest, quote)
        if end < 0:
            return f"unterminated {quote} quote"
        tail = rest[end + 1 :].strip()
        if tail and not tail.startswith("#"):
            return "unexpected text after the closing quote"
        return key, value
    # An unquoted value ends at a " #" comment; "a#b" keeps its "#".
    comment = re.search(r"\s#", rest)
    if comment:
        rest = rest[: comment.start()]
    return key, rest.rstrip()


def _read_quoted(text: str, quote: str) -> tuple[str, int]:
    """Read a quoted value starting at text[0]; return (value, index of closing quote or -1)."""
    escapes = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
    out: list[str] = []
    i = 1
    while i < len(text):
        char = text[i]
        if char == quote:
            return "".join(out), i
        # Only double quotes interpret escapes; single quotes are literal.
        if quote == '"' and char == "\\" and i + 1 < len(text) and text[i + 1] in escapes:
            out.append(escapes[text[i + 1]])
            i += 2
            continue
        out.append(char)
        i += 1
    return "", -1
