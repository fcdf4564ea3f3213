"""The sandbox settings a person chooses (``terminal.sandbox`` in config.yaml), read and checked.

``terminal.sandbox`` is either a profile name (``workspace``, ``read-only``, ``off``) or a
mapping with ``profile`` and the other keys of :class:`SandboxSettings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_MAX_PROCESSES",
    "PROFILES",
    "HomeAllow",
    "SandboxSettings",
    "settings_from_config",
    "settings_problems",
]

PROFILES = ("workspace", "read-only", "off")
"""``workspace``: write the task's folder and its own ``/tmp``; ``read-only``: write only its
``/tmp``; ``off``: no sandbox (the person's explicit choice, never a fall back)."""

DEFAULT_MAX_PROCESSES = 4096
"""Processes a sandboxed command may have at once (a fork bomb stops there)."""

_KEYS = ("profile", "network", "hide", "home_allow", "max_processes", "max_file_size_mb")

_HOME_ALLOW_FORM = (
    "terminal.sandbox.home_allow must be a list of paths in the home folder, each a string "
    "(shown read-only) or a mapping {path: ~/..., writable: true}"
)


@dataclass(frozen=True)
class HomeAllow:
    """A path of the home folder that commands see although the home folder is hidden.

    :param path: as written (``~/.cache/foo`` or an absolute path inside the home folder).
    :param writable: commands may write there too (``workspace`` profile only); else read-only.
    """

    path: str
    writable: bool = False


@dataclass(frozen=True)
class SandboxSettings:
    """What a sandboxed command may do.

    :param profile: one of :data:`PROFILES`.
    :param network: whether commands reach the network (off by default).
    :param hide: more paths (``~`` allowed) a command must not see, besides the builtin ones.
    :param home_allow: more paths of the home folder a command sees (the home folder is
        hidden but for the workspace and a builtin list of toolchain folders).
    :param max_processes: processes a command may run at once (``None``: no limit).
    :param max_file_size_mb: the largest file a command may write, in MiB (``None``: no limit).
    """

    profile: str = "workspace"
    network: bool = False
    hide: tuple[str, ...] = field(default_factory=tuple)
    home_allow: tuple[HomeAllow, ...] = field(default_factory=tuple)
    max_processes: int | None = DEFAULT_MAX_PROCESSES
    max_file_size_mb: int | None = None

    @property
    def enabled(self) -> bool:
        """Whether commands run in the sandbox (any profile but ``off``)."""
        return self.profile != "off"


def _raw(config: Mapping[str, Any]) -> Any:
    terminal = config.get("terminal") if isinstance(config, Mapping) else None
    return terminal.get("sandbox") if isinstance(terminal, Mapping) else None


def _profile(value: Any) -> str:
    if value is False:  # YAML reads a bare `off` as false
        return "off"
    if value is None or value is True:
        return "workspace"
    text = str(value).strip().lower()
    if text not in PROFILES:
        raise ValueError(
            f"terminal.sandbox must be one of {', '.join(PROFILES)} (or a mapping with "
            f"'profile'), got {value!r}"
        )
    return text


def _limit(table: Mapping[str, Any], key: str, default: int | None) -> int | None:
    if key not in table:
        return default
    value = table[key]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"terminal.sandbox.{key} must be a whole number above 0, got {value!r}")
    return value


def _home_allow(value: Any) -> tuple[HomeAllow, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, (str, Mapping)) else value
    if not isinstance(items, list):
        raise ValueError(_HOME_ALLOW_FORM)
    found = []
    for item in items:
        if isinstance(item, Mapping):
            writable = item.get("writable", False)
            if set(item) - {"path", "writable"} or not isinstance(writable, bool):
                raise ValueError(_HOME_ALLOW_FORM)
            path = item.get("path")
        else:
            path, writable = item, False
        if not isinstance(path, str) or not path.strip():
            raise ValueError(_HOME_ALLOW_FORM)
        path = path.strip()
        if not (path.startswith("/") or path == "~" or path.startswith("~/")):
            raise ValueError(
                f"terminal.sandbox.home_allow: {path!r} must start with ~/ or / (a path in the "
                "home folder)"
            )
        found.append(HomeAllow(path, writable))
    return tuple(found)


def settings_from_config(config: Mapping[str, Any]) -> SandboxSettings:
    """The sandbox settings of ``config``; :class:`ValueError` (one readable line) when
    ``terminal.sandbox`` is malformed."""
    raw = _raw(config)
    if not isinstance(raw, Mapping):
        return SandboxSettings(profile=_profile(raw))
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        raise ValueError(
            f"unknown key terminal.sandbox.{unknown[0]}; the keys are {', '.join(_KEYS)}"
        )
    network = raw.get("network", False)
    if not isinstance(network, bool):
        raise ValueError(f"terminal.sandbox.network must be true or false, got {network!r}")
    hide = raw.get("hide") or []
    if isinstance(hide, str):
        hide = [hide]
    if not isinstance(hide, list) or not all(isinstance(p, str) and p.strip() for p in hide):
        raise ValueError("terminal.sandbox.hide must be a list of paths")
    return SandboxSettings(
        profile=_profile(raw.get("profile")),
        network=network,
        hide=tuple(hide),
        home_allow=_home_allow(raw.get("home_allow")),
        max_processes=_limit(raw, "max_processes", DEFAULT_MAX_PROCESSES),
        max_file_size_mb=_limit(raw, "max_file_size_mb", None),
    )


def settings_problems(config: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``terminal.sandbox`` in ``config`` (one line each; ``[]`` if nothing)."""
    try:
        settings_from_config(config)
    except ValueError as exc:
        return [str(exc)]
    return []
