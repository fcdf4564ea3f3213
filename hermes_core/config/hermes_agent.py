"""The configuration keys the Hermes agent (0.19) writes to ``config.yaml``, in one place.

A home the Hermes agent wrote holds its keys; hermes accepts every one of them silently (no
unknown-key warning), honours those it shares (declared by the core or a plugin), and
``hermes doctor`` lists, once each, those present in the file that it does not honour, with what
hermes does instead (:func:`not_honoured`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

APPROVAL_MODES: tuple[str, ...] = ("smart", "off")
"""The Hermes agent's ``approvals.mode`` values hermes has no mode of its own for: both ask
(``manual``), since approvals fail closed."""

_KEPT = "kept for the Hermes agent; hermes does not use it"

SECTIONS: dict[str, str] = {
    "_config_version": "the Hermes agent's config format version; hermes does not need it",
    "providers": "hermes's providers are plugins: `hermes providers list`, `hermes setup`",
    "credential_pool_strategies": "one key per provider, from .env or the configuration",
    "max_concurrent_sessions": _KEPT,
    "max_live_sessions": _KEPT,
    "web": "the web tools come with hermes-toolset-web (`web.search_backend`, docs/web.md)",
    "browser": "the browser comes with hermes-toolset-browser (docs/browser.md)",
    "checkpoints": "file checkpoints come with hermes-checkpoints (docs/checkpoints.md)",
    "context_file_max_chars": "project context files are read by hermes-prompt-defaults",
    "file_read_max_chars": "tool results are capped by tools.max_result_chars",
    "mcp_discovery_timeout": "MCP servers come with hermes-toolset-mcp (`mcp_servers:`)",
    "mcp": "MCP servers come with hermes-toolset-mcp (`mcp_servers:`)",
    "tool_output": "tool results are capped by tools.max_result_chars",
    "tool_loop_guardrails": "invalid tool calls end a turn after agent.tool_max_invalid steps",
    "compression": "the context engine's keys (`hermes config show`) decide compression",
    "kanban": _KEPT,
    "openrouter": "provider settings go under model: and fallback_providers",
    "bedrock": "no Bedrock provider ships here",
    "display": "the interactive chat has its own display",
    "dashboard": "no dashboard here",
    "privacy": "secrets are redacted always (hermes_runtime.secrets.redact)",
    "tts": "no speech here",
    "stt": "no speech here",
    "voice": "no speech here",
    "human_delay": _KEPT,
    "memory": "the memory toolset reads MEMORY.md and USER.md of the home",
    "delegation": "subagents come with hermes-toolset-delegation",
    "prefill_messages_file": _KEPT,
    "goals": _KEPT,
    "moa": _KEPT,
    "skills": "the skills toolset reads the home's skills/ folder",
    "curator": _KEPT,
    "honcho": "memory providers are not honoured",
    "timezone": "dates are local time",
    "slack": "messaging platforms come with hermes-gateway",
    "discord": "messaging platforms come with hermes-gateway",
    "whatsapp": "messaging platforms come with hermes-gateway",
    "telegram": "messaging platforms come with hermes-gateway",
    "mattermost": "messaging platforms come with hermes-gateway",
    "matrix": "messaging platforms come with hermes-gateway",
    "command_allowlist": "the command policy decides (`hermes approvals`), with the sandbox",
    "quick_commands": _KEPT,
    "platform_hints": "the platform hint is a prompt layer of hermes-prompt-defaults",
    "hooks": "shell hooks are not run; plugins use the hook specs",
    "hooks_auto_accept": "shell hooks are not run",
    "personalities": "SOUL.md of the home is the persona",
    "security": "secrets are redacted always; commands run in the sandbox",
    "cron": "scheduled jobs come with hermes-cron (`hermes cron`)",
    "code_execution": _KEPT,
    "logging": "`hermes --debug` logs to stderr",
    "model_catalog": _KEPT,
    "network": _KEPT,
    "gateway": "the messaging gateway comes with hermes-gateway (`hermes gateway`)",
    "streaming": "agent.stream streams answers",
    "sessions": "sessions live in sessions.db (`hermes sessions`)",
    "onboarding": "`hermes setup`",
    "updates": "pip updates hermes",
    "lsp": _KEPT,
    "x_search": _KEPT,
    "secrets": "keys live in .env (mode 600)",
    "paste_collapse_threshold": _KEPT,
    "paste_collapse_threshold_fallback": _KEPT,
    "paste_collapse_char_threshold": _KEPT,
    "computer_use": _KEPT,
    "desktop": _KEPT,
    "vertex": _KEPT,
    "fallback_model": "fallback_providers lists the providers tried when one fails",
    "smart_model_routing": _KEPT,
    "custom_providers": "a custom endpoint is provider `custom` with model.base_url",
    "platform_toolsets": "toolsets lists the enabled toolsets",
    "agents": _KEPT,
}
"""Top-level keys of the Hermes agent that hermes does not honour (none of the core or of a
default plugin declares them), and what hermes does instead."""

SHARED_SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "agent": (
        "gateway_timeout", "restart_drain_timeout", "service_tier", "tool_use_enforcement",
        "intent_ack_continuation", "task_completion_guidance", "parallel_tool_call_guidance",
        "environment_probe", "environment_hint", "coding_context", "coding_instructions",
        "verify_guidance", "max_verify_nudges", "verify_on_stop", "gateway_timeout_warning",
        "clarify_timeout", "gateway_notify_interval", "gateway_auto_continue_freshness",
        "local_stream_stale_timeout", "image_input_mode", "disabled_toolsets",
        "reasoning_overrides", "reasoning_effort", "verbose", "quiet_mode",
    ),
    "terminal": (
        "modal_mode", "cwd", "timeout", "daemon_term_grace_seconds", "home_mode",
        "shell_init_files", "auto_source_bashrc", "docker_image", "docker_forward_env",
        "docker_env", "singularity_image", "modal_image", "daytona_image", "container_cpu",
        "container_memory", "container_disk", "container_persistent", "docker_volumes",
        "docker_mount_cwd_to_workspace", "docker_network", "docker_extra_args",
        "docker_run_as_host_user", "persistent_shell",
    ),
    "approvals": (
        "timeout", "cron_mode", "deny", "mcp_reload_confirm", "destructive_slash_confirm",
    ),
    "tools": ("tool_search",),
    "auxiliary": ("transient_retries",),
    "plugins": ("enabled", "entries"),
    "model": ("name", "temperature"),
}  # fmt: skip
"""Keys the Hermes agent writes inside sections hermes also has; where hermes (or an installed
backend plugin) declares one, it is honoured, else it is only accepted."""


def is_platform_toolset(name: str) -> bool:
    """Whether ``name`` is one of the Hermes agent's platform toolsets (``hermes-cli``,
    ``hermes-telegram``, ...: every toolset of that platform), which hermes reads as its
    default bundle."""
    return name.startswith("hermes-") and len(name) > len("hermes-")


def is_hermes_agent_key(dotted: str) -> bool:
    """Whether ``dotted`` (``a.b.c``) is, or lies inside, a key the Hermes agent writes."""
    top, _, rest = dotted.partition(".")
    if top in SECTIONS:
        return True
    if not rest:
        return False
    return rest.partition(".")[0] in SHARED_SECTION_KEYS.get(top, ())


def _note(dotted: str) -> str:
    top = dotted.partition(".")[0]
    return SECTIONS.get(top, _KEPT)


def not_honoured(data: Mapping[str, Any], declared: Any) -> Iterator[tuple[str, str]]:
    """``(dotted key, what hermes does instead)`` for each Hermes agent key present in the
    configuration ``data`` that nothing declares here (``declared(dotted)`` says whether the
    core or a plugin does); one line per top-level key, one per key of a shared section."""
    for top, value in data.items():
        key = str(top)
        if key in SECTIONS and not declared(key):
            yield key, _note(key)
        elif key in SHARED_SECTION_KEYS and isinstance(value, Mapping):
            for sub in value:
                dotted = f"{key}.{sub}"
                if str(sub) in SHARED_SECTION_KEYS[key] and not declared(dotted):
                    yield dotted, _KEPT
        if key == "approvals" and isinstance(value, Mapping):
            mode = value.get("mode")
            if mode in APPROVAL_MODES:
                yield (
                    "approvals.mode",
                    (
                        f"{mode!r} is the Hermes agent's; hermes asks before dangerous actions "
                        "(manual), as approvals fail closed"
                    ),
                )
