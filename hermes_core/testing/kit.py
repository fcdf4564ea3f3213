"""Helpers for testing hermes plugins: agents with a scripted model, isolated homes, plugins
loaded through their real entry points, and assertions on what the model was sent."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hermes_hookspecs import ModelRequest, Tool, Toolset, hookimpl

from ..loop.agent import Agent
from ..loop.events import Callbacks
from ..loop.transcript import validate
from ..plugins.manager import TRACE_VARIABLE, PluginManager, PluginRecord
from .scripted import ScriptedModel, Step


def plugin_manager(
    plugins: Iterable[str | object] = (), *, strict: bool = True, disabled: Iterable[str] = ()
) -> PluginManager:
    """A plugin manager that loads only ``plugins``.

    Strings are entry point (or dist) names, loaded through their real entry points; other
    objects (modules, class instances) are registered in-process. With ``strict`` a plugin that
    fails to load fails the test with its error. Of the environment only
    ``HERMES_TRACE_PLUGINS`` is read, so a failing test can be rerun with its hook calls traced.
    """
    names = [p for p in plugins if isinstance(p, str)]
    objects = [
        (getattr(p, "__name__", type(p).__name__), p) for p in plugins if not isinstance(p, str)
    ]
    # Only the trace switch passes through: a test's plugins must not depend on HERMES_PLUGINS.
    environ = {k: v for k, v in os.environ.items() if k == TRACE_VARIABLE}
    manager = PluginManager(
        only=names, extra=objects, strict=strict, disabled=disabled, environ=environ
    )
    missing = [n for n in names if n not in manager.records]
    if missing:
        raise AssertionError(
            f"no installed plugin has the entry point name(s): {', '.join(missing)}"
        )
    return manager


def toolset_plugin(
    *tools: Tool,
    name: str = "demo",
    description: str | None = None,
    includes: Iterable[str] = (),
    enabled: bool = True,
) -> object:
    """An in-process plugin registering one toolset ``name`` that holds ``tools`` (pass it in
    ``plugins``); ``includes`` and ``enabled`` are the toolset's own fields."""
    tools_held, includes_held = list(tools), list(includes)

    class ToolsetPlugin:
        @hookimpl
        def hermes_register_toolsets(self, register: Any) -> None:
            register(
                Toolset(
                    name=name,
                    description=name if description is None else description,
                    tools=list(tools_held),
                    includes=list(includes_held),
                    enabled_by_default=enabled,
                )
            )

    return ToolsetPlugin()


def load_plugin(name: str) -> PluginRecord:
    """Load the plugin with entry point ``name`` exactly as hermes would; fail on any error."""
    record = plugin_manager([name]).records[name]
    assert record.status == "loaded", f"plugin {name!r}: {record.status}: {record.error}"
    return record


CALLBACK_NAMES: dict[str, str] = {
    "event_sink": "events",
    "tool_progress_callback": "tool_progress",
    "thinking_callback": "thinking",
    "reasoning_callback": "reasoning",
    "step_callback": "step",
    "stream_delta_callback": "stream_delta",
    "tool_gen_callback": "tool_generation",
    "status_callback": "status",
    "clarify_callback": "clarify",
    "approval_callback": "approval",
}
"""The keywords :func:`make_agent` takes for the agent's :class:`Callbacks`, and their fields."""


def make_agent(
    *script: Step,
    model: ScriptedModel | None = None,
    plugins: Sequence[str | object] = (),
    home: str | Path | None = None,
    config: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Agent:
    """An :class:`Agent` driven by a scripted model, with only ``plugins`` loaded.

    ``script`` steps go to a new :class:`ScriptedModel` (or are added to ``model``); the model is
    available as ``agent.client``. ``config`` is the whole configuration (defaults fill the rest);
    nothing is read from disk or the environment unless ``home`` is given.

    Other keywords: ``plugin_manager`` (instead of ``plugins``), the callbacks by the names of
    :data:`CALLBACK_NAMES` (``approval_callback``, ``clarify_callback``, ``event_sink``...), and
    what :meth:`Agent.from_config` takes (``yolo``, ``session_store``, ``session_id``,
    ``toolsets``, ``stream``, ``max_turns``...).
    """
    client = model or ScriptedModel()
    client.add(*script)
    manager = kwargs.pop("plugin_manager", None) or plugin_manager(plugins)
    if config is None and home is None:
        config = {}
    named = {CALLBACK_NAMES[k]: kwargs.pop(k) for k in list(kwargs) if k in CALLBACK_NAMES}
    return Agent.from_config(
        config,
        client=client,
        plugins=manager,
        home=home,
        callbacks=Callbacks(**named) if named else None,
        **kwargs,
    )


def transcript_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Every transcript rule ``messages`` break, one line each; empty when they are valid (the
    check hermes makes before every model call)."""
    return validate(messages)


def assert_valid_transcript(messages: list[dict[str, Any]]) -> None:
    """Fail unless ``messages`` satisfy every transcript rule (alternation, one answer per call)."""
    problems = validate(messages)
    assert not problems, "invalid transcript: " + "; ".join(problems)


def assert_request_valid(request: ModelRequest) -> None:
    """Fail unless a recorded request is what providers accept: valid transcript, no internal
    fields, tool schemas sorted by name."""
    assert_valid_transcript(request.messages)
    for message in request.messages:
        leaked = [k for k in message if k.startswith("_") or k in ("reasoning", "finish_reason")]
        assert not leaked, f"internal fields sent to the model: {leaked}"
    names = request.tool_names
    assert names == sorted(names), f"tool schemas not sorted: {names}"


def isolated_environ(home: Path) -> dict[str, str]:
    """The current environment without ``HERMES_*`` variables, with ``HERMES_HOME`` set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(home)
    return env


def scripted_provider_plugin(model: ScriptedModel) -> object:
    """An in-process plugin that registers provider ``scripted`` answering with ``model``
    (for driving ``hermes chat`` in tests: pass ``--provider scripted``)."""
    from hermes_hookspecs import Provider, hookimpl

    class ScriptedProviderPlugin:
        @hookimpl
        def hermes_register_providers(self, register: Any) -> None:
            register(
                Provider(
                    name="scripted",
                    api_mode="chat_completions",
                    create_client=lambda settings: model,
                    default_model="scripted",
                    description="the test kit's scripted model",
                )
            )

    return ScriptedProviderPlugin()
