"""The public contract of hermes: hook markers, hook specifications and data types.

Plugins import from here and never from ``hermes_core``.
"""

from __future__ import annotations

from .approval import APPROVAL_DECISIONS, ApprovalDecision, ApprovalRequest
from .context_engine import ContextEngine
from .environment import CommandResult, Environment, EnvironmentFactory
from .errors import (
    AuthenticationError,
    ContextOverflowError,
    EnvironmentUnavailable,
    HermesError,
    ProviderError,
    RateLimitError,
    ToolCancelled,
    ToolError,
)
from .markers import PROJECT_NAME, hookimpl, hookspec
from .prompt import TIERS, PromptContext, PromptLayer
from .providers import (
    API_MODES,
    FINISH_REASONS,
    ModelClient,
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderSettings,
    StreamSink,
    Usage,
)
from .sessions import SessionInfo, SessionStore
from .tools import Block, Tool, ToolCall, ToolContext, ToolHandler, ToolResult, Toolset

__all__ = [
    "API_MODES",
    "APPROVAL_DECISIONS",
    "FINISH_REASONS",
    "PROJECT_NAME",
    "TIERS",
    "ApprovalDecision",
    "ApprovalRequest",
    "AuthenticationError",
    "Block",
    "CommandResult",
    "ContextEngine",
    "ContextOverflowError",
    "Environment",
    "EnvironmentFactory",
    "EnvironmentUnavailable",
    "HermesError",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "PromptContext",
    "PromptLayer",
    "Provider",
    "ProviderError",
    "ProviderSettings",
    "RateLimitError",
    "SessionInfo",
    "SessionStore",
    "StreamSink",
    "Tool",
    "ToolCall",
    "ToolCancelled",
    "ToolContext",
    "ToolError",
    "ToolHandler",
    "ToolResult",
    "Toolset",
    "Usage",
    "hookimpl",
    "hookspec",
]
