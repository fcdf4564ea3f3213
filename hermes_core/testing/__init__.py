"""The hermes test kit: a scripted model, agents with only the plugins you ask for, plugins
loaded through their real entry points, and assertions on recorded requests.

It is also a pytest plugin (installed with hermes-agent): see :mod:`hermes_core.pytest_plugin`
for the fixtures, and docs/testing-plugins.md.
"""

from __future__ import annotations

from .kit import (
    assert_request_valid,
    assert_valid_transcript,
    isolated_environ,
    load_plugin,
    make_agent,
    plugin_manager,
)
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

__all__ = [
    "Call",
    "ScriptExhausted",
    "ScriptedModel",
    "Turn",
    "assert_request_valid",
    "assert_valid_transcript",
    "isolated_environ",
    "load_plugin",
    "make_agent",
    "plugin_manager",
    "text",
    "tool_call",
    "tool_calls",
    "wait_until",
]
