"""What the configuration says: the ``checkpoints.*`` keys, the workspace and the backend."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import defaults

MIB = 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """The ``checkpoints.*`` keys, with their defaults filled in."""

    enabled: bool = defaults.ENABLED
    keep: int = defaults.KEEP
    max_age_days: float = defaults.MAX_AGE_DAYS
    max_total_mb: float = defaults.MAX_TOTAL_MB
    max_file_mb: float = defaults.MAX_FILE_MB
    exclude: tuple[str, ...] = defaults.EXCLUDE
    read_only_tools: frozenset[str] = frozenset()

    @property
    def max_file_bytes(self) -> int:
        """The size above which a file is skipped, in bytes."""
        return int(self.max_file_mb * MIB)

    @property
    def max_total_bytes(self) -> int:
        """The most the store may take, in bytes."""
        return int(self.max_total_mb * MIB)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Settings:
        """The settings of a configuration (its ``checkpoints`` section; defaults for the rest,
        and for values of the wrong type, which the host's validation reports)."""
        section = config.get("checkpoints")
        if not isinstance(section, Mapping):
            return cls()
        base = cls()

        def number(key: str, default: float) -> float:
            value = section.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                return default
            return float(value)

        def names(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
            value = section.get(key)
            if not isinstance(value, list | tuple):
                return default
            return tuple(str(item) for item in value if isinstance(item, str) and item)

        enabled = section.get("enabled", base.enabled)
        return cls(
            enabled=enabled if isinstance(enabled, bool) else base.enabled,
            keep=max(1, int(number("keep", base.keep))),
            max_age_days=number("max_age_days", base.max_age_days),
            max_total_mb=number("max_total_mb", base.max_total_mb),
            max_file_mb=number("max_file_mb", base.max_file_mb),
            exclude=names("exclude", base.exclude),
            read_only_tools=frozenset(names("read_only_tools", ())),
        )


def backend_of(config: Mapping[str, Any]) -> str:
    """The execution backend the configuration names (``terminal.backend``; ``local`` when
    unset)."""
    terminal = config.get("terminal")
    backend = terminal.get("backend") if isinstance(terminal, Mapping) else None
    return str(backend) if backend else "local"


def workspace_of(config: Mapping[str, Any]) -> Path:
    """The workspace a configuration's commands run in, as the local backend finds it
    (``terminal.cwd``, else the process's working folder), with links resolved."""
    terminal = config.get("terminal")
    cwd = terminal.get("cwd") if isinstance(terminal, Mapping) else None
    start = os.getcwd() if cwd in (None, "", ".") else os.path.expanduser(str(cwd))
    return Path(os.path.realpath(start))


def may_change_workspace(tool: str, settings: Settings) -> bool:
    """Whether a call of ``tool`` may change the workspace: every tool but those known to be
    read-only (:data:`~hermes_checkpoints.defaults.READ_ONLY_TOOLS` and
    ``checkpoints.read_only_tools``). An unknown tool may: fail closed."""
    return tool not in defaults.READ_ONLY_TOOLS and tool not in settings.read_only_tools
