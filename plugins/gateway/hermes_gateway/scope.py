"""What each person's runs may do: their :class:`~hermes_hookspecs.PersonScope`, worked out
from ``gateway.users``, ``gateway.groups`` and ``gateway.guests`` over the configuration, and
the ``hermes_person_scope`` hook that hands it to the host before every run of a person (a
gateway turn, one of their scheduled jobs, one of their subagents).

Precedence, strongest first: the person's own entry, then their groups in the order their entry
lists them, then the configuration. Toolsets are the intersection of every list that applies
(a ceiling over what the configuration enables, never a widening). ``approvals`` is ``deny``
unless the person's entry or a group of theirs (the guests' entry for a guest) sets it: the
configuration's ``approvals.mode`` (``yolo`` say) is never inherited. Nor is a sandbox turned
``off``: a person's commands run in the ``workspace`` sandbox unless their entry or a group says
otherwise.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import PersonScope, hookimpl

from .errors import GatewaySettingsError
from .people import SANDBOX_PROFILES, People, Settings, load_people
from .workspaces import person_workspace

_MAX_CONFIGS = 8
"""Configurations whose people are kept parsed (a process has one or two)."""


def _profile(value: Any) -> str:
    """A ``terminal.sandbox`` profile as the sandbox reads it; anything it would refuse is
    ``workspace`` here (the sandbox still reports the bad value)."""
    if value is False:
        return "off"
    if isinstance(value, str) and value.strip().lower() in SANDBOX_PROFILES:
        return value.strip().lower()
    return "workspace"


def _configured_sandbox(config: Mapping[str, Any]) -> dict[str, Any]:
    """``terminal.sandbox`` of ``config`` as a mapping, its profile normalised."""
    terminal = config.get("terminal")
    raw = terminal.get("sandbox") if isinstance(terminal, Mapping) else None
    if isinstance(raw, Mapping):
        out = dict(raw)
        out["profile"] = _profile(raw.get("profile", "workspace"))
    else:
        out = {"profile": _profile("workspace" if raw is None or raw is True else raw)}
    hide = out.get("hide")
    if isinstance(hide, str):
        out["hide"] = [hide]
    return out


def sandbox_of(layers: list[Settings], config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``terminal.sandbox`` of a person's runs: the configured one, with ``off`` made
    ``workspace``, then each layer's keys over it, the strongest last (``hide`` lists are
    joined: a layer only adds paths to hide)."""
    sandbox = _configured_sandbox(config)
    if sandbox["profile"] == "off":
        sandbox["profile"] = "workspace"
    for layer in reversed(layers):
        for key, value in (layer.sandbox or {}).items():
            if key == "hide":
                known = list(sandbox.get("hide") or [])
                sandbox["hide"] = known + [path for path in value if path not in known]
            else:
                sandbox[key] = value
    return sandbox


def _first(layers: list[Settings], name: str) -> Any:
    for layer in layers:
        value = getattr(layer, name)
        if value is not None:
            return value
    return None


def scope_of(
    people: People, person: str, config: Mapping[str, Any], home: Path | None = None
) -> PersonScope:
    """The :class:`~hermes_hookspecs.PersonScope` of ``person`` (a configured person, a guest,
    or an id no longer configured, who gets what guests get) under ``config``; with the hermes
    ``home`` and ``gateway.workspaces: per-user``, every run of theirs works in their workspace
    (so does a scheduled job, which no message places)."""
    layers = people.layers(person)
    toolsets: list[str] | None = None
    for layer in layers:
        if layer.toolsets is not None:
            if toolsets is None:
                toolsets = list(dict.fromkeys(layer.toolsets))
            else:
                toolsets = [name for name in toolsets if name in layer.toolsets]
    overrides: dict[str, Any] = {"approvals.mode": _first(layers, "approvals") or "deny"}
    section = config.get("gateway")
    per_user = not isinstance(section, Mapping) or section.get("workspaces", "per-user") != "shared"
    if home is not None and per_user:
        folder = person_workspace(home, person)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        overrides["terminal.cwd"] = str(folder)
    for name, key in (
        ("model", "model.default"),
        ("provider", "model.provider"),
        ("base_url", "model.base_url"),
        ("max_turns", "agent.max_turns"),
    ):
        value = _first(layers, name)
        if value is not None:
            overrides[key] = value
    sandbox = sandbox_of(layers, config)
    if sandbox != _configured_sandbox(config):  # as configured: nothing to override
        overrides["terminal.sandbox"] = sandbox
    memory = _first(layers, "memory")
    if memory is not None:
        overrides["memory.memory_enabled"] = memory
        overrides["memory.user_profile_enabled"] = memory
    if memory is False:
        disabled = list(config.get("disabled_tools") or [])
        overrides["disabled_tools"] = disabled if "memory" in disabled else [*disabled, "memory"]
    return PersonScope(
        toolsets=tuple(toolsets) if toolsets is not None else None,
        shared_people=people.shared_with(person),
        config_overrides=overrides,
    )


class Scopes:
    """The people of one configuration and each person's scope, worked out once."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        section = config.get("gateway") or {}
        if not isinstance(section, Mapping):
            raise GatewaySettingsError(f"config gateway must be a mapping, not {section!r}")
        self.config = config
        self.people = load_people(section)
        self._scopes: dict[tuple[str, Path | None], PersonScope] = {}

    def of(self, person: str, home: Path | None = None) -> PersonScope:
        """``person``'s scope in ``home`` (worked out on first use, then kept)."""
        found = self._scopes.get((person, home))
        if found is None or not _workspace_there(found):
            found = scope_of(self.people, person, self.config, home)
            self._scopes[(person, home)] = found
        return found


def _workspace_there(scope: PersonScope) -> bool:
    """Whether the workspace a kept scope names still exists (``forget`` removes it)."""
    folder = scope.config_overrides.get("terminal.cwd")
    return folder is None or os.path.isdir(folder)


_scopes: dict[int, Scopes] = {}
_lock = threading.Lock()


def scopes_for(config: Mapping[str, Any]) -> Scopes:
    """The :class:`Scopes` of the configuration object ``config``, parsed once per object
    (the host hands every run the same one)."""
    found = _scopes.get(id(config))
    if found is not None and found.config is config:
        return found
    made = Scopes(config)
    with _lock:
        if len(_scopes) >= _MAX_CONFIGS:
            _scopes.pop(next(iter(_scopes)))
        _scopes[id(config)] = made
    return made


@hookimpl
def hermes_person_scope(
    person: str, config: Mapping[str, Any], home: Path | None
) -> PersonScope | None:
    """The scope of ``person`` under the gateway's ``users``, ``groups`` and ``guests``, in
    their workspace of ``home``; a bad ``gateway`` section raises (the host then runs nothing
    for them)."""
    return scopes_for(config).of(person, home)


__all__ = ["Scopes", "hermes_person_scope", "sandbox_of", "scope_of", "scopes_for"]
