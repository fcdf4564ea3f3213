"""The configuration keys the core itself reads (the loop, the providers' settings, the plugin
manager, the tool dispatcher and the approval gate); plugins declare theirs through
``hermes_register_config``."""

from __future__ import annotations

from typing import Any

from hermes_hookspecs import API_MODES
from hermes_hookspecs.config_schema import ConfigKey, ConfigSection

from .hermes_agent import APPROVAL_MODES as HERMES_AGENT_APPROVAL_MODES

APPROVAL_MODES: tuple[str, ...] = ("manual", "deny", "yolo")
"""The values of ``approvals.mode``."""

_STRINGS: dict[str, Any] = {"type": "array", "items": "string"}


def budget_sections() -> list[ConfigSection]:
    """``budgets`` (spend caps, docs/budgets.md) and ``providers`` (credential pools,
    docs/credentials.md)."""
    caps = [
        ConfigKey(name, "number", doc=doc, minimum=0)
        for name, doc in (
            ("session_usd", "dollars each session may spend"),
            ("person_day_usd", "dollars each person (the owner too) may spend a day"),
            ("gateway_user_day_usd", "dollars each gateway user may spend a day"),
            ("cron_job_day_usd", "dollars each scheduled job may spend a day"),
            ("session_tokens", "tokens of unpriced models each session may use"),
            ("person_day_tokens", "tokens of unpriced models each person may use a day"),
            ("gateway_user_day_tokens", "tokens of unpriced models a gateway user may use a day"),
            ("cron_job_day_tokens", "tokens of unpriced models a scheduled job may use a day"),
            ("reserve_output_tokens", "answer tokens the check before a call assumes"),
        )
    ]
    return [
        ConfigSection(
            "budgets",
            [
                *caps,
                ConfigKey("people", "object", doc="a person's own caps: {id: {day_usd: N}}"),
                ConfigKey("cron_jobs", "object", doc="a job's own caps: {id: {day_usd: N}}"),
                ConfigKey(
                    "downshift_to",
                    ("string", "object"),
                    doc="{model, at}: cheaper model near a cap",
                ),
            ],
            doc="spend caps checked before every model call",
        ),
        ConfigSection(
            "providers",
            [],
            doc="per-provider settings: keys (a credential pool), strategy, cooldowns",
            open=True,
        ),
    ]


def core_sections() -> list[ConfigSection]:
    """The sections of the keys the core reads, with their defaults."""
    return [
        ConfigSection(
            "model",
            [
                ConfigKey("default", "string", doc="model name sent to the provider"),
                ConfigKey("provider", "string", doc="provider to use, by name"),
                ConfigKey("base_url", "string", doc="API endpoint (self-hosted or proxy)"),
                ConfigKey("api_key", "string", doc="API key (better kept in .env)", secret=True),
                ConfigKey("api_mode", "string", doc="wire protocol", enum=API_MODES),
                ConfigKey("context_length", "integer", doc="context window in tokens", minimum=1),
                ConfigKey("max_tokens", "integer", doc="cap on each answer's length", minimum=1),
                ConfigKey(
                    "timeout",
                    "number",
                    doc="seconds before a request is given up (unset: 600)",
                    minimum=0,
                    exclusive_minimum=True,
                ),
                ConfigKey("options", "object", doc="extra request fields passed to the provider"),
                ConfigKey(
                    "vision",
                    "boolean",
                    doc="false: the model does not take images; auxiliary.vision describes them",
                ),
            ],
            doc="the main model (a plain string is read as model.default)",
        ),
        ConfigSection(
            "",
            [
                ConfigKey("toolsets", **_STRINGS, doc="toolsets to enable"),
                ConfigKey("disabled_toolsets", **_STRINGS, doc="toolsets to switch off"),
                ConfigKey("disabled_tools", **_STRINGS, doc="single tools to switch off"),
                ConfigKey(
                    "fallback_providers", "array", doc="providers tried in order when one fails"
                ),
                ConfigKey("auxiliary", "object", doc="the model of each side task, by task"),
                ConfigKey("pricing", "object", doc="prices per million tokens, by model"),
            ],
        ),
        ConfigSection(
            "agent",
            [
                ConfigKey("max_turns", "integer", 90, "model calls per user message", minimum=1),
                ConfigKey(
                    "tool_concurrency", "integer", 8, "tool calls run at the same time", minimum=1
                ),
                ConfigKey("stream", "boolean", doc="stream model output as it arrives"),
                ConfigKey("platform", "string", "cli", "where the agent runs"),
                ConfigKey(
                    "tool_max_invalid",
                    "integer",
                    3,
                    "steps in a row of only invalid tool calls that end the turn",
                    minimum=1,
                ),
                ConfigKey(
                    "api_max_retries", "integer", 3, "retries of a failed model call", minimum=0
                ),
                ConfigKey(
                    "retry_base_delay", "number", 1.0, "seconds before the first retry", minimum=0
                ),
                ConfigKey(
                    "stale_timeout",
                    "number",
                    doc="seconds without a response before a model call is retried",
                    minimum=0,
                ),
                ConfigKey("job", "string", doc="the scheduled job a run is for (set by cron)"),
            ],
            doc="the agent loop",
        ),
        *budget_sections(),
        ConfigSection(
            "context",
            [
                ConfigKey(
                    "engine",
                    ("string", "null"),
                    None,
                    "context engine by name (null: the compressor when installed)",
                )
            ],
        ),
        ConfigSection(
            "terminal",
            [
                ConfigKey("backend", "string", "local", "execution environment by name"),
                ConfigKey("env_passthrough", **_STRINGS, doc="secret variables commands may see"),
            ],
            doc="the execution environment (the backends declare their own keys)",
        ),
        ConfigSection(
            "store",
            [
                ConfigKey(
                    "url",
                    "string",
                    doc="where sessions are kept: unset for the home's sessions.db, or a URL "
                    "whose scheme an installed store plugin serves (postgresql://...)",
                    secret=True,
                ),
            ],
            doc="the session store",
        ),
        ConfigSection(
            "plugins",
            [ConfigKey("disabled", **_STRINGS, default=[], doc="installed plugins not to load")],
        ),
        ConfigSection(
            "tools",
            [
                ConfigKey(
                    "max_result_chars",
                    "integer",
                    100_000,
                    "longest tool result before it is cut",
                    minimum=100,
                ),
                ConfigKey(
                    "timeout",
                    ("number", "null"),
                    doc="seconds a tool handler may work (0 or null: no limit; unset: 300)",
                    minimum=0,
                ),
                ConfigKey("timeouts", "object", doc="a timeout per tool name"),
                ConfigKey(
                    "defer",
                    ("object", "boolean"),
                    doc="tool search: which tools are deferred behind a catalogue "
                    "(mode, toolsets, tools, keep, mcp, min_tools, min_share, backend; "
                    "docs/tool-search.md)",
                ),
            ],
        ),
        ConfigSection(
            "approvals",
            [
                ConfigKey(
                    "mode",
                    "string",
                    "manual",
                    "ask, refuse or allow dangerous actions (the Hermes agent's smart and "
                    "off ask, as manual does)",
                    enum=APPROVAL_MODES + HERMES_AGENT_APPROVAL_MODES,
                )
            ],
            doc="the approval gate",
        ),
        ConfigSection(
            "prompt_caching",
            [
                ConfigKey("cache_ttl", "string", doc="cached prefix lifetime", enum=("5m", "1h")),
                ConfigKey("enabled", "boolean", doc="send cache markers where providers take them"),
            ],
            doc="prompt caching, for every provider that supports it",
        ),
        ConfigSection(
            "serve",
            [
                ConfigKey(
                    "auto",
                    "boolean",
                    False,
                    "`hermes chat -q` starts a resident `hermes serve` when none runs",
                )
            ],
            doc="the resident process (`hermes serve`)",
        ),
    ]
