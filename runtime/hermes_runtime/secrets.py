"""Secrets of this process: which environment variables and values must never reach a command's
environment or the model.

The host marks the variables it loaded from ``$HERMES_HOME/.env`` and the keys it knows from the
configuration; execution environments build a child's environment with :func:`child_environ`
and the host passes every tool result through :func:`redact`. Process-wide, as ``os.environ`` is.
"""

from __future__ import annotations

import base64
import functools
import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"
"""What a secret value is replaced with."""

KNOWN_SECRET_VARIABLES: frozenset[str] = frozenset(
    {
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENROUTER_API_KEY",
        "DEEPSEEK_API_KEY",
        "CUSTOM_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GROQ_API_KEY",
        "MISTRAL_API_KEY",
        "XAI_API_KEY",
        "HF_TOKEN",
        "MODAL_TOKEN_ID",
        "MODAL_TOKEN_SECRET",
        "HERMES_API_KEY",
    }
)
"""Variables treated as secrets even when they were not loaded from ``.env``."""

_MIN_VALUE_LENGTH = 8  # shorter values would redact ordinary words
_lock = threading.Lock()
_names: set[str] = set()
_values: set[str] = set()


def mark_secret(name: str | None = None, value: str | None = None) -> None:
    """Record a secret variable name and/or a secret value (e.g. a key from ``.env``)."""
    with _lock:
        if name:
            _names.add(name)
        if value and len(value) >= _MIN_VALUE_LENGTH:
            _values.add(value)


def secret_names() -> frozenset[str]:
    """Every variable name that is a secret: the known ones and the marked ones."""
    with _lock:
        return KNOWN_SECRET_VARIABLES | frozenset(_names)


def secret_values() -> frozenset[str]:
    """Every marked secret value, plus the values of secret variables set in this process."""
    with _lock:
        values = set(_values)
        names = KNOWN_SECRET_VARIABLES | _names
    for name in names:
        value = os.environ.get(name)
        if value and len(value) >= _MIN_VALUE_LENGTH:
            values.add(value)
    return frozenset(values)


def passthrough(config: Mapping[str, Any] | None) -> frozenset[str]:
    """The secret variables the user allowed into commands (``terminal.env_passthrough``)."""
    terminal = (config or {}).get("terminal") if isinstance(config, Mapping) else None
    allowed = terminal.get("env_passthrough") if isinstance(terminal, Mapping) else None
    if isinstance(allowed, str):
        allowed = [allowed]
    return frozenset(str(a) for a in allowed or () if a)


def child_environ(
    config: Mapping[str, Any] | None = None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for a command a tool runs: ``base`` (default ``os.environ``) without any
    secret variable, except those ``terminal.env_passthrough`` names."""
    source = os.environ if base is None else base
    hidden = secret_names() - passthrough(config)
    return {k: v for k, v in source.items() if k not in hidden}


def is_forwardable(name: str, config: Mapping[str, Any] | None = None) -> bool:
    """Whether variable ``name`` may be forwarded into a sandbox (docker, ssh, modal)."""
    return name not in secret_names() or name in passthrough(config)


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every known secret value replaced by :data:`REDACTED`, also where it
    appears encoded: reversed, in hex (either case), or inside base64 at any of the three
    alignments (standard and URL-safe alphabets). Longest forms first."""
    values = secret_values()
    more = {v for v in extra if v and len(v) >= _MIN_VALUE_LENGTH}
    for form in _longest_first(values | more if more else values):
        if form in text:
            text = text.replace(form, REDACTED)
    return text


@functools.lru_cache(maxsize=32)
def _longest_first(values: frozenset[str]) -> tuple[str, ...]:
    # Every tool result is redacted, and the secrets seldom change: sort their forms once.
    return tuple(sorted({f for v in values for f in encoded_forms(v)}, key=len, reverse=True))


@functools.lru_cache(maxsize=256)
def encoded_forms(value: str) -> tuple[str, ...]:
    """The spellings of ``value`` that :func:`redact` removes: itself, reversed, hex, and the
    part of its base64 that does not depend on the bytes around it, for each alignment."""
    data = value.encode("utf-8", "surrogateescape")
    forms = {value, value[::-1], data.hex(), data.hex().upper()}
    for shift in range(3):
        padded = b"\0" * shift + data
        whole = len(padded) // 3 * 3
        core = base64.b64encode(padded[:whole]).decode("ascii")[4 if shift else 0 :]
        if len(core) >= _MIN_VALUE_LENGTH:
            forms.add(core)
            forms.add(core.translate(_URLSAFE))
    return tuple(forms)


_URLSAFE = str.maketrans("+/", "-_")


def forget_secrets() -> None:
    """Forget the marked names and values (tests; a process that switches profiles)."""
    with _lock:
        _names.clear()
        _values.clear()
    _longest_first.cache_clear()
    encoded_forms.cache_clear()
