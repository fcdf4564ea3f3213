"""The models that answer side tasks (a compression summary, an image description) for an
agent: one connection per task, with the main model as the last fallback."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import HermesError, ModelRequest, ModelResponse

from ..loop import transcript
from ..loop.events import Events
from ..plugins.manager import PluginManager
from ..plugins.registry import Registry
from .calls import ModelConnection


class AuxiliaryModels:
    """The models that answer side tasks (a compression summary, ...) for an agent, one
    connection per task, set up on first use.

    :param main: the agent's connection; it answers the tasks ``auxiliary.<task>`` does not
        configure, and its model of the moment is the last fallback of those it does.
    """

    def __init__(
        self,
        registry: Registry,
        plugins: PluginManager,
        config: Mapping[str, Any],
        events: Events,
        main: ModelConnection,
    ) -> None:
        self.registry = registry
        self.plugins = plugins
        self.config = config
        self.events = events
        self.main = main
        self._connections: dict[str, ModelConnection] = {}
        self.last_call = ("", "", "")
        """The model, provider and pooled key id of the last side request that answered."""

    def request(
        self,
        task: str,
        messages: list[dict[str, Any]],
        max_tokens: int | None,
        *,
        session_id: str,
        cancel: threading.Event,
    ) -> ModelResponse:
        """Ask the model of ``task`` to answer ``messages``, without tools (see
        ``Agent.side_request``); ``cancel`` interrupts the call.

        :raises Cancelled: ``cancel`` was set meanwhile.
        :raises HermesError: the call failed.
        """
        connection = self._connection(task)
        if connection is not self.main:
            connection.start_turn()  # a fallback lasts for one side request
        wire = transcript.wire_messages(messages, None)

        def make_request(model: str, cancel: threading.Event) -> ModelRequest:
            return ModelRequest(
                model=model,
                messages=wire,
                cancel=cancel,
                max_tokens=max_tokens,
                session_id=session_id,
            )

        response = connection.call(make_request, cancel)
        active = connection.active
        self.last_call = (response.model or active.model, active.provider, connection.key_id)
        return response

    def close(self) -> None:
        """Close the connections set up for side tasks (not the main one)."""
        for connection in self._connections.values():
            if connection is not self.main:
                connection.close()

    def _connection(self, task: str) -> ModelConnection:
        connection = self._connections.get(task)
        if connection is not None:
            return connection
        connection = self.main
        entry = (self.config.get("auxiliary") or {}).get(task)
        if isinstance(entry, Mapping) and entry.get("provider"):
            derived = dict(self.config)
            derived["model"] = {
                "provider": entry["provider"],
                "default": entry.get("model"),
                "base_url": entry.get("base_url"),
                "api_mode": entry.get("api_mode"),
            }
            derived["fallback_providers"] = list(entry.get("fallback_providers") or []) + [
                {"provider": self.main.active.provider, "model": self.main.active.model}
            ]
            try:
                connection = ModelConnection(
                    self.registry, self.plugins, derived, self.events, store=self.main.store
                )
            except HermesError as exc:
                self.events.emit(
                    "status", text=f"auxiliary.{task} unusable ({exc}); using the main model"
                )
        self._connections[task] = connection
        return connection
