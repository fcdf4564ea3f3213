"""Configuration helpers the backends share: the ``terminal`` section, the variables a sandbox
may get, yes/no flags, memory sizes and names that are safe for containers and sandboxes."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from typing import Any

from hermes_runtime.secrets import passthrough

__all__ = [
    "forwarded_environ",
    "module_installed",
    "parse_bool",
    "parse_memory_mb",
    "safe_name",
    "terminal_config",
]

ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""What a variable name may look like (shell-safe)."""


def terminal_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``terminal`` section of the effective configuration (empty when missing)."""
    section = config.get("terminal") if isinstance(config, Mapping) else None
    return section if isinstance(section, Mapping) else {}


def forwarded_environ(
    config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables of hermes' own environment a sandbox gets: only those
    ``terminal.env_passthrough`` names (and that are set). Nothing else of this machine's
    environment, and no secret, reaches a sandbox."""
    source = os.environ if environ is None else environ
    return {
        name: source[name]
        for name in sorted(passthrough(config))
        if name in source and ENV_KEY.match(name)
    }


def parse_bool(value: Any, default: bool = False) -> bool:
    """A config flag: booleans, ``"true"``/``"yes"``/``"1"``/``"on"`` and their opposites."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"not a yes/no value: {value!r}")


def parse_memory_mb(value: Any) -> int | None:
    """A memory size in MiB: a number is MiB (as in Hermes' ``container_memory: 5120``); a
    string may carry a unit (``512m``, ``2g``, ``2GiB``)."""
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a memory size: {value!r}")
    if isinstance(value, int | float):
        return int(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(value).lower())
    if not match:
        raise ValueError(f"not a memory size: {value!r} (use MiB, or a unit: 512m, 2g)")
    number, unit = float(match.group(1)), match.group(2) or "m"
    factor = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[unit]
    return max(1, int(number * factor))


def safe_name(text: str, limit: int = 40) -> str:
    """``text`` reduced to characters that are safe in container and sandbox names."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "task"
    return cleaned[:limit]


def module_installed(name: str) -> bool:
    """Whether the module ``name`` (a backend's SDK) can be imported, without importing it."""
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
