"""The hermes plugin that runs Hermes agent plugins: each hermes hook calls the Hermes agent
hooks that have the same meaning, with the keyword arguments and return conventions the Hermes
agent documents (see docs/hermes-plugins.md).

This module registers what Hermes agent plugins provide (tools, skills, system prompt sections,
commands); the hooks around tool calls are in :mod:`.tool_hooks`, around model requests in
:mod:`.model_hooks`, around sessions and subagents in :mod:`.session_hooks`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_hookspecs import hookimpl
from hermes_runtime.home import default_home

from . import current
from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin
from .locate import argv_profile, host_of, pinned, read_config, use_host, where
from .model_hooks import hermes_after_response, hermes_before_request
from .session_hooks import (
    hermes_session_end,
    hermes_session_start,
    hermes_subagent_start,
    hermes_subagent_stop,
    subagent_status,
)
from .tool_hooks import hermes_approve, hermes_post_tool_call, hermes_pre_tool_call, tool_status
from .turns import PLUGIN_SOURCE

_where = where
_argv_profile = argv_profile

SECTION_ORDER = 500
"""Where system prompt sections go in the volatile tier: after the memory snapshot (100), before
the session facts (1000)."""
SKILL_TOOL = "hermes_plugin_skill"
SKILL_TOOLSET = "hermes_plugin_skills"


# --- registration --------------------------------------------------------------------------


@hookimpl
def hermes_register_toolsets(register: Callable[[Any], None]) -> None:
    """The tools of Hermes agent plugins, one toolset per Hermes toolset name, and the
    ``hermes_plugin_skill`` tool when a plugin registered skills."""
    from .tools import toolsets

    host = host_of()
    for toolset in toolsets(host.tools.values(), host.toolset_descriptions()):
        register(toolset)
    if host.skills:
        register(_skills_toolset(host))


def _skills_toolset(host: Any) -> Any:
    from hermes_hookspecs import Tool, ToolError, Toolset

    names = sorted(host.skills)

    def read_skill(args: dict[str, Any], ctx: Any) -> str:
        entry = host.skills.get(str(args.get("name") or ""))
        if entry is None:
            raise ToolError(f"no plugin skill {args.get('name')!r}; known: {', '.join(names)}")
        return Path(entry["path"]).read_text(encoding="utf-8")

    listing = "; ".join(f"{n}: {host.skills[n]['description'] or '-'}" for n in names)
    tool = Tool(
        name=SKILL_TOOL,
        description=f"Read a skill that a Hermes agent plugin ships. Skills: {listing}",
        parameters={
            "type": "object",
            "properties": {"name": {"type": "string", "enum": names}},
            "required": ["name"],
        },
        handler=read_skill,
    )
    return Toolset(
        name=SKILL_TOOLSET, description="Skills shipped by Hermes agent plugins", tools=[tool]
    )


@hookimpl
def hermes_prompt_layers(context: Any) -> list[Any] | None:
    """The ``register_system_prompt_section`` sections, sorted by id, after the memory snapshot
    (tier ``volatile``); built once per session like every layer."""
    if pinned() is not None:
        host = pinned()
    elif current.command_context() is not None or not context.hermes_home:
        host = host_of()
    else:
        from .host import host_for

        host = host_for(Path(context.hermes_home), context.config)
    if not host.prompt_sections:
        return None
    from hermes_hookspecs import PromptLayer

    from .manifest import profile_name

    info = {
        "session_id": context.session_id,
        "model": context.model,
        "provider": context.provider,
        "platform": context.platform,
        "profile_name": profile_name(host.home),
        "cwd": context.cwd,
    }
    return [
        PromptLayer(
            name=f"hermes-plugin:{section_id}",
            text=f"## Plugin context: {section_id}\n\n{text}",
            tier="volatile",
            order=SECTION_ORDER + index,
        )
        for index, (section_id, text) in enumerate(host.render_prompt_sections(info))
    ]


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """``hermes agent-plugins``, and the ``register_cli_command`` commands of Hermes agent
    plugins. Plugins are imported here only when ``plugins.enabled`` names at least one, so a
    plain ``hermes --help`` imports none of them."""
    from .cli_adapter import agent_plugins_group, argparse_command

    cli.add_command(agent_plugins_group(host_of))
    home = default_home()
    profile = argv_profile(sys.argv[1:])
    if profile:
        home = home / "profiles" / profile
    config = read_config(home)
    enabled = (config.get("plugins") or {}).get("enabled") if isinstance(config, dict) else None
    if not enabled:
        return
    from .host import host_for

    host = pinned() if pinned() is not None else host_for(home, config)
    for name, entry in sorted(host.cli_commands.items()):
        cli.add_command(argparse_command(name, entry))


@hookimpl
def hermes_describe_plugins(report: Callable[[Any], None]) -> None:
    """One report per Hermes agent plugin found, loaded or not."""
    for item in host_of().reports():
        report(item)


__all__ = [
    "PLUGIN_SOURCE",
    "hermes_after_response",
    "hermes_approve",
    "hermes_before_request",
    "hermes_post_tool_call",
    "hermes_pre_tool_call",
    "hermes_session_end",
    "hermes_session_start",
    "hermes_subagent_start",
    "hermes_subagent_stop",
    "subagent_status",
    "tool_status",
    "use_host",
]
