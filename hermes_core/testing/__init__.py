"""The hermes test kit: a scripted model, agents with only the plugins you ask for, plugins
loaded through their real entry points, assertions on recorded requests, and a fake LLM server
(:class:`FakeLLM`) that speaks the providers' wire protocols to their real SDKs.

It is also a pytest plugin (installed with hermes-framework): see
:mod:`hermes_core.testing.pytest_plugin` for the fixtures, and docs/testing-plugins.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from .fake_llm import FakeLLM, RecordedRequest

_LAZY = {"FakeLLM": "fake_llm", "RecordedRequest": "fake_llm"}
"""Exported names whose modules load on first use (the fake server imports http.server)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Call",
    "FakeLLM",
    "RecordedRequest",
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
