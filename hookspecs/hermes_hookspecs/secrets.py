"""Secrets of this process: which environment variables and values must never reach a command's
environment or the model.

The host marks the variables it loaded from ``$HERMES_HOME/.env`` and the keys it knows from the
configuration; execution environments build a child's environment with :func:`child_environ`
and the host passes every tool result through :func:`redact`. Process-wide, as ``os.environ`` is.
"""

from __future__ import annotations

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
    """``text`` with every known secret value (longest first) replaced by :data:`REDACTED`."""
    values = sorted(
        secret_values() | {v for v in extra if v and len(v) >= _MIN_VALUE_LENGTH},
        key=len,
        reverse=True,
    )
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def forget_secrets() -> None:
    """Forget the marked names and values (tests; a process that switches profiles)."""
    with _lock:
        _names.clear()
        _values.clear()
