"""The request of each attempt of a model call: the wire messages with the tools, the stream
sink, the model settings of ``model.*`` and the provider the connection uses at that moment;
``hermes_before_request`` hooks see each one."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from hermes_hookspecs import ModelRequest

from ..models.calls import ModelConnection
from ..plugins.manager import PluginManager
from .events import Events

MakeRequest = Callable[[str, threading.Event], ModelRequest]
"""``make(model, cancel)``: the request of one attempt (the connection picks the model)."""


class Attempts:
    """The request maker of one model call (``make(model, cancel)``), which keeps the request
    of its latest attempt: the one a response answers."""

    def __init__(self, make: MakeRequest) -> None:
        self.make = make
        self.last: ModelRequest | None = None

    def __call__(self, model: str, cancel: threading.Event) -> ModelRequest:
        """The request of the next attempt."""
        return self.make(model, cancel)


class RequestMaker:
    """Makes the model requests of one agent.

    :param connection: the model connection (its active provider goes into each request).
    :param plugins: for the ``hermes_before_request`` hooks.
    :param events: where streamed text, reasoning and tool-call starts go.
    :param config: the configuration (``model.max_tokens``, ``model.options``).
    :param stream: whether responses are streamed.
    """

    def __init__(
        self,
        connection: ModelConnection,
        plugins: PluginManager,
        events: Events,
        config: Mapping[str, Any],
        stream: bool,
    ) -> None:
        self.connection = connection
        self.plugins = plugins
        self.events = events
        self.stream = stream
        model_cfg = config.get("model") or {}
        self.max_tokens: int | None = model_cfg.get("max_tokens")
        options = model_cfg.get("options")
        self.options: dict[str, Any] = dict(options) if isinstance(options, Mapping) else {}

    def maker(
        self,
        messages: list[dict[str, Any]],
        source: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        session_id: str,
        task_id: str,
        deferred: list[dict[str, Any]] | None = None,
    ) -> Attempts:
        """How the request for ``messages`` (made from ``source``) and ``tools`` (and the
        ``deferred`` tools behind tool search) is made at each attempt of the call (the
        attempts' ``last`` request is kept on it)."""

        def make(model: str, cancel: threading.Event) -> ModelRequest:
            active = self.connection.active
            settings = active.settings
            request = ModelRequest(
                model=model,
                messages=messages,
                tools=tools,
                stream=self.stream,
                sink=self.sink,
                cancel=cancel,
                session_id=session_id,
                task_id=task_id,
                source_messages=source,
                max_tokens=self.max_tokens,
                options=dict(self.options),
                provider=active.provider or "",
                base_url=(settings.base_url or "") if settings is not None else "",
                api_mode=settings.api_mode if settings is not None else "",
                deferred_tools=deferred or [],
            )
            self.plugins.call_each("hermes_before_request", request=request)
            attempts.last = request
            return request

        attempts = Attempts(make)
        return attempts

    def sink(self, event: str, data: dict[str, Any]) -> None:
        """Where a streaming client reports progress: turned into the agent's events."""
        if event == "text_delta":
            self.events.emit("text_delta", text=data.get("text", ""))
        elif event == "reasoning_delta":
            self.events.emit("reasoning", text=data.get("text", ""), delta=True)
        elif event == "tool_call_started":
            self.events.emit("tool_generation", **data)
        else:
            self.events.emit(event, **data)
