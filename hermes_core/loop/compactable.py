"""The agent as its compactor sees it: the narrow :class:`~hermes_core.loop.compaction.Conversation`
interface, so compaction never reaches into the agent's own state."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import ModelResponse, SessionInfo

if TYPE_CHECKING:
    from .agent import Agent


class AgentConversation:
    """The agent as its compactor sees it (:class:`~hermes_core.loop.compaction.Conversation`)."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The agent's transcript."""
        return self._agent.messages

    @property
    def session(self) -> SessionInfo | None:
        """The agent's current session."""
        return self._agent.session

    @property
    def model(self) -> str:
        """The model of the current turn."""
        return self._agent.model

    @property
    def provider(self) -> str:
        """The provider of the current turn."""
        return self._agent.provider_name

    @property
    def cancel_event(self) -> threading.Event:
        """The current turn's interrupt flag."""
        return self._agent._cancel

    def reset_interrupt(self) -> None:
        """Forget an interrupt of an earlier turn."""
        self._agent._cancel = threading.Event()

    def ensure_session(self) -> None:
        """Start (or resume) the session if that did not happen yet."""
        self._agent._start_session()

    def stored_session(self, session_id: str) -> SessionInfo | None:
        """The session as the store holds it."""
        return self._agent.session_store.get_session(session_id)

    def side_request(
        self, task: str, messages: list[dict[str, Any]], max_tokens: int | None
    ) -> ModelResponse:
        """Ask the model of ``auxiliary.<task>`` (``Agent.side_request``)."""
        return self._agent.side_request(task, messages, max_tokens)

    def continue_in(
        self,
        child: SessionInfo,
        messages: list[dict[str, Any]],
        system_message: str | None,
        *,
        ended_at: float,
    ) -> None:
        """End the current session (compressed) and go on in ``child`` holding ``messages``."""
        self._agent._continue_in(child, messages, system_message, ended_at)
