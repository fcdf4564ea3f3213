"""The agent's settings that come from the configuration: those :meth:`Agent.from_config
<hermes_core.loop.agent.Agent.from_config>` takes by name, and the tool dispatcher's
(concurrency, result size, timeouts)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import ModelClient, SessionStore

from ..config.loading import Config, ConfigError
from ..host import Host
from ..plugins.manager import PluginManager
from ..tools.toolsets import ToolBox
from .approvals import ApprovalGate
from .dispatch import DEFAULT_MAX_RESULT_CHARS, DEFAULT_TOOL_TIMEOUT, Dispatcher
from .events import Events

SETTINGS: dict[str, str] = {
    "model": "model.default",
    "provider": "model.provider",
    "base_url": "model.base_url",
    "api_key": "model.api_key",
    "api_mode": "model.api_mode",
    "toolsets": "toolsets",
    "max_turns": "agent.max_turns",
    "stream": "agent.stream",
    "platform": "agent.platform",
}
"""The settings :meth:`Agent.from_config` takes by name, and the configuration key of each."""


def host_for(
    config: Config | Mapping[str, Any] | None,
    *,
    home: str | Path | None,
    profile: str | None,
    plugins: PluginManager | None,
    client: ModelClient | None,
    session_store: SessionStore | None,
    settings: Mapping[str, Any],
) -> Host:
    """The host :meth:`Agent.from_config <hermes_core.loop.agent.Agent.from_config>` makes:
    ``settings`` (names of :data:`SETTINGS`) override the configuration.

    :raises TypeError: a setting has no name of :data:`SETTINGS`.
    """
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise TypeError(f"Agent.from_config() got unknown setting(s): {', '.join(unknown)}")
    overrides = {SETTINGS[name]: value for name, value in settings.items()}
    if overrides.get("toolsets") is not None:
        overrides["toolsets"] = list(overrides["toolsets"])
    return Host(
        home=home,
        profile=profile,
        config=config,
        overrides=overrides,
        plugins=plugins,
        session_store=session_store,
        client=client,
    )


def make_dispatcher(
    toolbox: ToolBox,
    plugins: PluginManager,
    approvals: ApprovalGate,
    events: Events,
    config: Mapping[str, Any],
) -> Dispatcher:
    """The dispatcher of ``toolbox`` as ``config`` sets it up: ``agent.tool_concurrency``,
    ``tools.max_result_chars``, ``tools.timeout`` and ``tools.timeouts``.

    :raises ConfigError: a timeout setting is not a number of seconds.
    """
    agent_cfg = config.get("agent") or {}
    tools_cfg = config.get("tools") or {}
    return Dispatcher(
        toolbox,
        plugins,
        approvals,
        events,
        concurrency=int(agent_cfg.get("tool_concurrency") or 8),
        max_result_chars=int(tools_cfg.get("max_result_chars") or DEFAULT_MAX_RESULT_CHARS),
        timeout=seconds(tools_cfg.get("timeout", DEFAULT_TOOL_TIMEOUT), "tools.timeout"),
        timeouts=tool_timeouts(tools_cfg.get("timeouts")),
    )


def seconds(value: Any, key: str) -> float | None:
    """A timeout setting: seconds > 0, or ``None`` for no limit (``0`` or ``null``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"{key}: expected a number of seconds >= 0 (0: no limit), got {value!r}")
    return float(value) or None


def tool_timeouts(value: Any) -> dict[str, float | None]:
    """``tools.timeouts``: a timeout per tool name, replacing ``tools.timeout`` for that tool."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"tools.timeouts: expected a mapping of tool name to seconds, got {value!r}"
        )
    return {str(name): seconds(v, f"tools.timeouts.{name}") for name, v in value.items()}
