"""Messaging platforms: the message a platform adapter hands the gateway, the adapter itself, and
what the gateway offers an adapter in return.

Declared here, by the one plugin that uses them, not in the contract: a plugin that adds a
platform depends on ``hermes-gateway`` and imports them from ``hermes_gateway``. An adapter
plugin registers a factory through ``hermes_register_platform_adapters``; the gateway
(``hermes gateway run``) builds one adapter per configured platform, connects it, and routes every
:class:`InboundMessage` it receives to an agent session. Adapters are asynchronous: every method
runs on the gateway's event loop and must not block it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from hermes_hookspecs import AgentOutcome


@dataclass(frozen=True)
class Attachment:
    """A file that came with a message (an image, a voice note, a document).

    :param kind: ``image``, ``audio``, ``video`` or ``file``.
    :param url: where the file can be fetched, when the platform gives a URL.
    :param path: a local copy, when the adapter downloaded it.
    :param mime_type: its media type, when known.
    :param name: its file name, when known.
    """

    kind: str
    url: str | None = None
    path: str | None = None
    mime_type: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class InboundMessage:
    """One message from a user on a platform, in the same shape whatever the platform.

    :param platform: the name the adapter was configured under (``gateway.platforms.<name>``).
    :param chat_id: the conversation it was written in (a DM, a group, a channel).
    :param user_id: who wrote it, as the platform identifies them (the allow-list holds these).
    :param text: its text; ``""`` for a message with only attachments.
    :param message_id: the platform's id of the message (replies refer to it).
    :param reply_to: the id of the message it answers, if any.
    :param attachments: files that came with it.
    :param user_name: a display name, for logs and prompts.
    :param person: the person the adapter itself authenticated the sender as (the API server's
        per-person keys: ``gateway.users.<id>.api_key_env``), a configured person id; ``None``
        (every other message): the gateway finds the person from ``platform`` and ``user_id``.
    :param trace_context: the W3C trace context the message came with (``traceparent``,
        ``tracestate``; the API server's request headers), handed to the turn it starts.
    """

    platform: str
    chat_id: str
    user_id: str
    text: str
    message_id: str = ""
    reply_to: str | None = None
    attachments: Sequence[Attachment] = ()
    user_name: str | None = None
    person: str | None = None
    trace_context: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class Gateway(Protocol):
    """What an adapter gets in :meth:`PlatformAdapter.connect`: where it hands messages.

    Both methods find the sender's person (``gateway.users``, or a guest the platform's
    allow-list lets in), run the turn for them, and apply the busy policy (``gateway.busy``)
    when the conversation already has a turn running.
    """

    async def dispatch(self, message: InboundMessage) -> None:
        """Handle a chat message: a ``/command`` or a turn of the agent in the conversation's
        session. Answers go back through the adapter's :meth:`~PlatformAdapter.send`. Returns
        once the message is accepted (queued or running), not when the answer is sent.

        :raises PermissionError: the user is not allowed on this platform (one readable line);
            nothing runs.
        """
        ...

    async def converse(
        self,
        message: InboundMessage,
        *,
        session_id: str | None = None,
        instructions: str | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> AgentOutcome:
        """Run one turn for a request/response adapter (an HTTP API) and return its outcome;
        nothing is sent through the adapter.

        :param message: the user's message (its text is the turn's prompt).
        :param session_id: continue this session; ``None`` continues the conversation's
            routed session (``platform``, ``chat_id``, ``user_id``), or starts one.
        :param instructions: extra system context for a new session.
        :param on_delta: receives the answer text as it streams, on the event loop.
        :raises PermissionError: the user is not allowed on this platform, or ``session_id``
            is another person's (one readable line); nothing runs.
        """
        ...


class PlatformAdapter(ABC):
    """The connection to one messaging platform, built by a registered factory.

    The gateway calls :meth:`connect` once at start-up and :meth:`disconnect` once at shutdown;
    between the two, the adapter hands every message it receives to ``gateway.dispatch`` (or
    ``gateway.converse``) and the gateway calls :meth:`send`, :meth:`edit` and :meth:`typing`
    to answer. An adapter that cannot start raises from :meth:`connect` with one readable line
    (the gateway refuses to run rather than serve without it).
    """

    @abstractmethod
    async def connect(self, gateway: Gateway) -> None:
        """Start receiving messages (open the socket, start polling, listen on a port)."""

    @abstractmethod
    async def disconnect(self) -> None:
        """Stop receiving and release everything :meth:`connect` opened."""

    @abstractmethod
    async def send(self, chat_id: str, text: str, *, reply_to: str | None = None) -> str:
        """Send ``text`` to a chat (as an answer to ``reply_to`` when given); return the id the
        platform gave the new message (``""`` when it gives none)."""

    async def edit(self, chat_id: str, message_id: str, text: str) -> None:  # noqa: B027
        """Replace the text of a message sent earlier. Platforms that cannot edit keep the
        default, which does nothing (the gateway then sends the whole answer once)."""

    async def typing(self, chat_id: str) -> None:  # noqa: B027
        """Show that an answer is being written. Platforms without such an indicator keep the
        default, which does nothing."""

    can_edit: bool = False
    """Whether :meth:`edit` works; the gateway streams answers by editing only when it does."""


AdapterFactory = Callable[[str, Mapping[str, Any]], PlatformAdapter]
"""``factory(name, settings)``: an adapter for the platform configured as
``gateway.platforms.<name>`` with those ``settings`` (that mapping); what
``hermes_register_platform_adapters`` (:mod:`hermes_gateway.hookspecs`) registers."""


__all__ = [
    "Attachment",
    "Gateway",
    "InboundMessage",
    "PlatformAdapter",
    "AdapterFactory",
]
