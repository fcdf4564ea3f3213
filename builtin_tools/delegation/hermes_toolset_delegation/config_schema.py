"""The configuration keys the delegation toolset reads (``delegation.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl

_STRING = ("string", "null")


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``delegation.*``; the defaults are those of :class:`.settings.Settings`."""
    register(
        ConfigSection(
            "delegation",
            [
                ConfigKey("max_iterations", "integer", 50, "turn limit of a sub-agent", minimum=1),
                ConfigKey(
                    "max_concurrent_children",
                    "integer",
                    doc="sub-agents running at once (unset: 3)",
                    minimum=1,
                ),
                ConfigKey(
                    "max_spawn_depth",
                    "integer",
                    doc="how deep sub-agents may delegate (unset: 1)",
                    minimum=0,
                ),
                ConfigKey("max_tasks", "integer", doc="tasks per call (unset: 10)", minimum=1),
                ConfigKey(
                    "subagent_auto_approve",
                    "boolean",
                    doc="sub-agents approve dangerous actions themselves",
                ),
                ConfigKey("model", _STRING, doc="model of the sub-agents (unset: the parent's)"),
                ConfigKey("provider", _STRING, doc="provider of the sub-agents"),
                ConfigKey("base_url", _STRING, doc="endpoint of the sub-agents"),
                ConfigKey("api_mode", _STRING, doc="wire protocol of the sub-agents"),
                ConfigKey(
                    "toolsets",
                    ("array", "null"),
                    items="string",
                    doc="toolsets of the sub-agents (unset: the parent's)",
                ),
                ConfigKey(
                    "depth",
                    "integer",
                    doc="set by the plugin in each child: how deep it is (not a user setting)",
                    minimum=0,
                ),
            ],
            doc="sub-agents (delegate_task)",
        )
    )
