"""The hermes test kit: a scripted model, agents with only the plugins you ask for, plugins
loaded through their real entry points, assertions on recorded requests, and a fake LLM server
(:class:`FakeLLM`) that speaks the providers' wire protocols to their real SDKs.

It is also a pytest plugin (installed with hermes-framework): see
:mod:`hermes_core.testing.pytest_plugin` for the fixtures, and docs/testing-plugins.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config.loading import ConfigError
from ..loop.agent import Agent
from ..loop.events import Callbacks
from ..loop.transcript import INTERRUPTED_RESULT, strip_internal
from .hosts import make_host, make_runner
from .kit import (
    assert_request_valid,
    assert_valid_transcript,
    isolated_environ,
    load_plugin,
    make_agent,
    plugin_manager,
    toolset_plugin,
    transcript_problems,
)
from .people import check_keeps_people_apart, run_as
from .scripted import (
    Call,
    ScriptedModel,
    ScriptExhausted,
    Turn,
    text,
    tool_call,
    tool_calls,
    wait_until,
)

if TYPE_CHECKING:
    from ..loop.runner import HostRunner
    from ..session_store import MemorySessionStore, SQLiteSessionStore
    from .fake_llm import FakeLLM, RecordedRequest

_LAZY = {
    "FakeLLM": "hermes_core.testing.fake_llm",
    "RecordedRequest": "hermes_core.testing.fake_llm",
    "HostRunner": "hermes_core.loop.runner",
    "MemorySessionStore": "hermes_core.session_store",
    "SQLiteSessionStore": "hermes_core.session_store",
}
"""Exported names whose modules load on first use (the fake server imports http.server, the
SQLite store sqlite3)."""

if not TYPE_CHECKING:  # type checkers see the real names through the imports above

    def __getattr__(name: str) -> Any:
        """The lazily imported name ``name``."""
        if name in _LAZY:
            import importlib

            value = getattr(importlib.import_module(_LAZY[name]), name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "INTERRUPTED_RESULT",
    "Agent",
    "Call",
    "Callbacks",
    "ConfigError",
    "FakeLLM",
    "HostRunner",
    "MemorySessionStore",
    "RecordedRequest",
    "SQLiteSessionStore",
    "ScriptExhausted",
    "ScriptedModel",
    "Turn",
    "assert_request_valid",
    "assert_valid_transcript",
    "check_keeps_people_apart",
    "isolated_environ",
    "load_plugin",
    "make_agent",
    "make_host",
    "make_runner",
    "plugin_manager",
    "run_as",
    "strip_internal",
    "text",
    "tool_call",
    "tool_calls",
    "toolset_plugin",
    "transcript_problems",
    "wait_until",
]
