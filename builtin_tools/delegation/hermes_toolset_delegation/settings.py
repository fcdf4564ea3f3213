"""The ``delegation`` section of the configuration, read and checked once per call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import ToolError

DEPTH_KEY = "delegation.depth"
"""Set by this plugin in every child's configuration: how many delegations deep the child is.
Not a user setting (a top-level agent is depth 0)."""


@dataclass(frozen=True)
class Settings:
    """What ``delegation.*`` says; defaults as documented in docs/delegation.md."""

    max_iterations: int = 50
    max_concurrent_children: int = 3
    max_spawn_depth: int = 1
    max_tasks: int = 10
    subagent_auto_approve: bool = False
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    api_mode: str | None = None
    toolsets: tuple[str, ...] | None = None
    depth: int = 0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Settings:
        """Read ``config["delegation"]``; raise :class:`ToolError` naming a bad key."""
        section = config.get("delegation") or {}
        if not isinstance(section, Mapping):
            raise ToolError("the delegation section of config.yaml must be a mapping")
        return cls(
            max_iterations=_int(section, "max_iterations", 50, low=1),
            max_concurrent_children=_int(section, "max_concurrent_children", 3, low=1),
            max_spawn_depth=_int(section, "max_spawn_depth", 1, low=0),
            max_tasks=_int(section, "max_tasks", 10, low=1),
            subagent_auto_approve=_bool(section, "subagent_auto_approve"),
            model=_str(section, "model"),
            provider=_str(section, "provider"),
            base_url=_str(section, "base_url"),
            api_mode=_str(section, "api_mode"),
            toolsets=_strlist(section, "toolsets"),
            depth=_int(section, "depth", 0, low=0),
        )


def _int(section: Mapping[str, Any], key: str, default: int, *, low: int) -> int:
    value = section.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ToolError(
            f"config delegation.{key} must be an integer of at least {low}, not {value!r}; "
            "ask the user to fix config.yaml"
        )
    return value


def _bool(section: Mapping[str, Any], key: str) -> bool:
    value = section.get(key, False)
    if not isinstance(value, bool):
        raise ToolError(f"config delegation.{key} must be true or false, not {value!r}")
    return value


def _str(section: Mapping[str, Any], key: str) -> str | None:
    value = section.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolError(f"config delegation.{key} must be a string, not {value!r}")
    return value


def _strlist(section: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolError(f"config delegation.{key} must be a list of toolset names")
    return tuple(value)
