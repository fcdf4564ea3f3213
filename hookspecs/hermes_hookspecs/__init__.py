"""The public contract of hermes: hook markers, hook specifications and data types.

Plugins import from here and never from ``hermes_core``. The markers and the errors are
imported with the package; every other name is imported on first access (PEP 562), so that
loading the plugin manager, which needs only those and the spec module, stays cheap at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import errors, markers
from .errors import *  # noqa: F403
from .markers import *  # noqa: F403

if TYPE_CHECKING:
    from .agents import *  # noqa: F403
    from .approval import *  # noqa: F403
    from .calls import *  # noqa: F403
    from .config_schema import *  # noqa: F403
    from .constants import *  # noqa: F403
    from .context_engine import *  # noqa: F403
    from .environment import *  # noqa: F403
    from .ledgers import *  # noqa: F403
    from .people import *  # noqa: F403
    from .prompt import *  # noqa: F403
    from .providers import *  # noqa: F403
    from .refusals import *  # noqa: F403
    from .reports import *  # noqa: F403
    from .sessions import *  # noqa: F403
    from .slash import *  # noqa: F403
    from .summaries import *  # noqa: F403
    from .tools import *  # noqa: F403
    from .turns import *  # noqa: F403

_LAZY: dict[str, tuple[str, ...]] = {
    "agents": ("OUTCOME_STATUSES", "AgentOutcome", "AgentRunner", "AgentTask", "CommandContext"),
    "approval": ("APPROVAL_DECISIONS", "ApprovalDecision", "ApprovalRequest"),
    "calls": ("Block", "ToolCall", "ToolContext", "ToolResult"),
    "config_schema": ("CONFIG_TYPES", "NO_DEFAULT", "ConfigKey", "ConfigSection"),
    "constants": ("API_MODES", "FINISH_REASONS"),
    "context_engine": ("ContextEngine",),
    "environment": (
        "BackgroundProcess",
        "CommandResult",
        "Environment",
        "EnvironmentConfigCheck",
        "EnvironmentFactory",
        "EnvironmentProbe",
        "PATH_SIGHTS",
        "PathSight",
        "SandboxedEnvironment",
        "SightedEnvironment",
    ),
    "ledgers": (
        "USAGE_ROW_KEYS",
        "KeyState",
        "KeyStateStore",
        "Spent",
        "UsageLedger",
        "UsageRecord",
        "usage_row",
    ),
    "people": (
        "PEOPLE_DIR",
        "PERSON_ID_RE",
        "PersonScope",
        "PersonalSessionStore",
        "check_person",
        "person_home",
    ),
    "prompt": ("TIERS", "PromptContext", "PromptLayer"),
    "providers": (
        "ModelClient",
        "ModelRequest",
        "ModelResponse",
        "Provider",
        "ProviderSettings",
        "StreamSink",
        "Usage",
    ),
    "refusals": ("BLOCKED_MARKER", "blocked"),
    "reports": ("REPORT_STATUSES", "PluginReport"),
    "sessions": (
        "LockingSessionStore",
        "SearchHit",
        "SearchableSessionStore",
        "SessionInfo",
        "SessionStore",
        "SessionStoreFactory",
    ),
    "slash": ("SLASH_NAME_RE", "SlashCommand", "SlashContext", "SlashOutcome"),
    "summaries": ("CONTEXT_SUMMARY_FLAG", "CONTEXT_SUMMARY_MARKER", "is_context_summary"),
    "tools": ("TOOL_NAME_RE", "Tool", "ToolHandler", "ToolOutput", "Toolset"),
    "turns": ("EXIT_REASONS", "TURN_RESULT_KEYS", "ExitReason", "TurnResult"),
}
"""The names imported on first access, by the module that defines them (and lists them in its
``__all__``; ``hookspecs/tests/test_contract.py`` checks the two agree)."""

_WHERE: dict[str, str] = {name: module for module, names in _LAZY.items() for name in names}


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the real names through the imports above: a
    # module-level ``__getattr__`` would make them accept any name, also one that moved out.

    def __getattr__(name: str) -> Any:
        """The lazily imported name ``name`` (``AttributeError`` for one the package lacks)."""
        module = _WHERE.get(name)
        if module is None:
            raise AttributeError(f"module 'hermes_hookspecs' has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """Every name of the package, the lazily imported ones included."""
    return sorted(set(globals()) | set(_WHERE))


__all__ = [*errors.__all__, *markers.__all__, *_WHERE]
