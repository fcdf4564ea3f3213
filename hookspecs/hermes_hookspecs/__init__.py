"""The public contract of hermes: hook markers, hook specifications and data types.

Plugins import from here and never from ``hermes_core``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    ERROR_KINDS,
    RETRYABLE_KINDS,
    AuthenticationError,
    Cancelled,
    ContextOverflowError,
    EnvironmentRefused,
    EnvironmentUnavailable,
    HermesError,
    ProviderError,
    RateLimitError,
    ToolCancelled,
    ToolError,
)
from .markers import PROJECT_NAME, hookimpl, hookspec

# Everything else is imported on first access (PEP 562), so that loading the plugin manager,
# which needs only the markers and the spec module, stays cheap at start-up.
_LAZY: dict[str, str] = {
    "API_MODES": "constants",
    "AgentOutcome": "agents",
    "AgentRunner": "agents",
    "AgentTask": "agents",
    "CommandContext": "agents",
    "OUTCOME_STATUSES": "agents",
    "REPORT_STATUSES": "reports",
    "APPROVAL_DECISIONS": "approval",
    "Attachment": "platforms",
    "Gateway": "platforms",
    "InboundMessage": "platforms",
    "PlatformAdapter": "platforms",
    "PlatformAdapterFactory": "platforms",
    "ApprovalDecision": "approval",
    "ApprovalRequest": "approval",
    "BLOCKED_MARKER": "refusals",
    "CONFIG_TYPES": "config_schema",
    "ConfigKey": "config_schema",
    "ConfigSection": "config_schema",
    "NO_DEFAULT": "config_schema",
    "CONTEXT_SUMMARY_FLAG": "summaries",
    "CONTEXT_SUMMARY_MARKER": "summaries",
    "Block": "calls",
    "BackgroundProcess": "environment",
    "CommandResult": "environment",
    "ContextEngine": "context_engine",
    "Environment": "environment",
    "EnvironmentConfigCheck": "environment",
    "EnvironmentFactory": "environment",
    "SandboxedEnvironment": "environment",
    "EnvironmentProbe": "environment",
    "FINISH_REASONS": "constants",
    "ModelClient": "providers",
    "ModelRequest": "providers",
    "ModelResponse": "providers",
    "PluginReport": "reports",
    "PromptContext": "prompt",
    "PromptLayer": "prompt",
    "Provider": "providers",
    "ProviderSettings": "providers",
    "SessionInfo": "sessions",
    "SearchHit": "sessions",
    "SearchableSessionStore": "sessions",
    "SessionStore": "sessions",
    "StreamSink": "providers",
    "TIERS": "prompt",
    "TOOL_NAME_RE": "tools",
    "Tool": "tools",
    "ToolCall": "calls",
    "ToolContext": "calls",
    "ToolHandler": "tools",
    "ToolOutput": "tools",
    "ToolResult": "calls",
    "Toolset": "tools",
    "EXIT_REASONS": "turns",
    "ExitReason": "turns",
    "TURN_RESULT_KEYS": "turns",
    "TurnResult": "turns",
    "Usage": "providers",
    "blocked": "refusals",
    "child_environ": "secrets",
    "default_home": "home",
    "is_context_summary": "summaries",
    "mark_secret": "secrets",
    "redact": "secrets",
}

if TYPE_CHECKING:
    from .agents import OUTCOME_STATUSES, AgentOutcome, AgentRunner, AgentTask, CommandContext
    from .approval import APPROVAL_DECISIONS, ApprovalDecision, ApprovalRequest
    from .calls import Block, ToolCall, ToolContext, ToolResult
    from .config_schema import CONFIG_TYPES, NO_DEFAULT, ConfigKey, ConfigSection
    from .constants import API_MODES, FINISH_REASONS
    from .context_engine import ContextEngine
    from .environment import (
        BackgroundProcess,
        CommandResult,
        Environment,
        EnvironmentConfigCheck,
        EnvironmentFactory,
        EnvironmentProbe,
        SandboxedEnvironment,
    )
    from .home import default_home
    from .platforms import (
        Attachment,
        Gateway,
        InboundMessage,
        PlatformAdapter,
        PlatformAdapterFactory,
    )
    from .prompt import TIERS, PromptContext, PromptLayer
    from .providers import (
        ModelClient,
        ModelRequest,
        ModelResponse,
        Provider,
        ProviderSettings,
        StreamSink,
        Usage,
    )
    from .refusals import BLOCKED_MARKER, blocked
    from .reports import REPORT_STATUSES, PluginReport
    from .secrets import child_environ, mark_secret, redact
    from .sessions import SearchableSessionStore, SearchHit, SessionInfo, SessionStore
    from .summaries import CONTEXT_SUMMARY_FLAG, CONTEXT_SUMMARY_MARKER, is_context_summary
    from .tools import TOOL_NAME_RE, Tool, ToolHandler, ToolOutput, Toolset
    from .turns import EXIT_REASONS, TURN_RESULT_KEYS, ExitReason, TurnResult


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_hookspecs' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "OUTCOME_STATUSES",
    "AgentOutcome",
    "AgentRunner",
    "AgentTask",
    "CommandContext",
    "BLOCKED_MARKER",
    "BackgroundProcess",
    "CONFIG_TYPES",
    "ConfigKey",
    "ConfigSection",
    "CONTEXT_SUMMARY_FLAG",
    "CONTEXT_SUMMARY_MARKER",
    "ERROR_KINDS",
    "RETRYABLE_KINDS",
    "REPORT_STATUSES",
    "API_MODES",
    "APPROVAL_DECISIONS",
    "FINISH_REASONS",
    "PROJECT_NAME",
    "TIERS",
    "TOOL_NAME_RE",
    "ApprovalDecision",
    "ApprovalRequest",
    "Attachment",
    "AuthenticationError",
    "Block",
    "Cancelled",
    "CommandResult",
    "ContextEngine",
    "ContextOverflowError",
    "Environment",
    "EnvironmentConfigCheck",
    "EnvironmentFactory",
    "SandboxedEnvironment",
    "EnvironmentProbe",
    "EnvironmentRefused",
    "EnvironmentUnavailable",
    "Gateway",
    "HermesError",
    "InboundMessage",
    "ModelClient",
    "NO_DEFAULT",
    "ModelRequest",
    "ModelResponse",
    "PlatformAdapter",
    "PlatformAdapterFactory",
    "PromptContext",
    "PromptLayer",
    "Provider",
    "ProviderError",
    "PluginReport",
    "ProviderSettings",
    "RateLimitError",
    "SearchHit",
    "SearchableSessionStore",
    "SessionInfo",
    "SessionStore",
    "StreamSink",
    "Tool",
    "ToolCall",
    "ToolCancelled",
    "ToolContext",
    "ToolError",
    "ToolHandler",
    "ToolOutput",
    "ToolResult",
    "Toolset",
    "EXIT_REASONS",
    "ExitReason",
    "TURN_RESULT_KEYS",
    "TurnResult",
    "Usage",
    "blocked",
    "child_environ",
    "default_home",
    "hookimpl",
    "hookspec",
    "is_context_summary",
    "mark_secret",
    "redact",
]
