"""Model providers: what a request and a response look like, and how a provider is described."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

StreamSink = Callable[[str, dict[str, Any]], None]
"""``sink(event, data)``: ``text_delta`` {text}, ``reasoning_delta`` {text},
``tool_call_started`` {index, id, name}, ``thinking`` {active}."""


@dataclass
class Usage:
    """Token counts of one model call (or a sum of calls).

    ``input_tokens`` counts the whole prompt, cached tokens included (providers whose APIs
    report cached tokens separately add them in), so context engines see the same figure
    whatever the provider. ``cache_read_tokens`` and ``cache_write_tokens`` say how much of it
    was served from or written to the prompt cache.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, other: Usage) -> None:
        """Add ``other``'s counts to these."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.reasoning_tokens += other.reasoning_tokens

    def as_dict(self) -> dict[str, int]:
        """The counts as a plain dict."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }


TOOL_SEARCH_NAME = "find_tools"
"""The name of hermes's own tool-search tool (one of the bridge tools of ``tools.defer``): a
provider whose API has a search call of its own (OpenAI's client ``tool_search``) turns it
into a call of this tool, which hermes runs."""
FOUND_TOOLS_FIELD = "_found_tools"
"""Internal field of a tool result message of a tool search: the names of the deferred tools
it found, best first (see :attr:`ModelRequest.deferred_tools`)."""


@dataclass
class ModelRequest:
    """One call to a model, in hermes's OpenAI-style format.

    :param model: the model name.
    :param messages: the transcript, system prompt first; already repaired, validated and
        stripped of internal fields. Providers convert it to their wire format; the list and
        its dicts may be reused for later requests: treat them as read-only, copy what you
        change.
    :param tools: OpenAI function-calling schemas, sorted by name (empty: no tools offered).
    :param stream: deliver deltas to ``sink`` as they arrive.
    :param sink: where streamed events go (see :data:`StreamSink`).
    :param cancel: set when the user interrupts; a provider should stop reading and return.
    :param max_tokens: cap on the output, when set.
    :param options: provider-specific extras (temperature, reasoning effort...).
    :param session_id: the session this request belongs to.
    :param task_id: the task this request belongs to.
    :param source_messages: the transcript ``messages`` was made from, without the system
        prompt and with internal fields kept, in the same order (``messages[-len(source):]``
        were made from it). Providers read the replay data they stored on assistant messages
        (keys starting with ``_``, e.g. signed thinking blocks) from here.
    :param provider: the name of the provider the request goes to, filled in by the host
        before ``hermes_before_request`` (empty when unknown).
    :param base_url: the endpoint it goes to (empty when unknown or the client's default).
    :param api_mode: its wire format (empty when unknown).
    :param key_id: the id of the pooled key the request goes out with, set by the host (empty
        when the provider has no credential pool); an error of this request is charged to it.
    :param deferred_tools: schemas (as in ``tools``, each with the ``toolset`` it belongs to
        beside ``function``) of the tools the model reaches through tool search
        (``tools.defer``), sorted by name, the same for the whole session. A
        provider whose API defers tools natively may send them marked deferred and turn the
        names a search found (:data:`FOUND_TOOLS_FIELD` of a tool result in
        ``source_messages``) into references; any other ignores them: the bridge tools in
        ``tools`` reach them.
    :param deferred_sent: set by the provider when it sent ``deferred_tools`` (natively
        deferred); the host's token ledger counts them then.
    """

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    stream: bool = False
    sink: StreamSink | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    max_tokens: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    session_id: str = ""
    task_id: str = ""
    source_messages: list[dict[str, Any]] = field(default_factory=list)
    provider: str = ""
    base_url: str = ""
    api_mode: str = ""
    key_id: str = ""
    deferred_tools: list[dict[str, Any]] = field(default_factory=list)
    deferred_sent: bool = False

    @property
    def system_prompt(self) -> str | None:
        """The system prompt of this request, if any."""
        if self.messages and self.messages[0].get("role") == "system":
            return self.messages[0].get("content")
        return None

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered, in the order sent."""
        return [t["function"]["name"] for t in self.tools]

    def emit(self, event: str, **data: Any) -> None:
        """Send a stream event to the sink, if there is one."""
        if self.sink is not None:
            self.sink(event, data)


@dataclass
class ModelResponse:
    """What one model call produced, converted back to hermes's format.

    :param message: an assistant message: ``role``, ``content`` (str or None), optionally
        ``tool_calls`` (OpenAI format, ``arguments`` as a JSON string) and ``reasoning``. Keys
        starting with ``_`` hold provider replay data: stored with the message, never sent as
        such, and handed back through :attr:`ModelRequest.source_messages`.
    :param finish_reason: one of :data:`FINISH_REASONS`.
    :param usage: token counts of this call.
    :param model: the model that answered, when the provider reports it.
    :param raw: the provider's own response object, for plugins that need more.
    """

    message: dict[str, Any]
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    raw: Any = None


@runtime_checkable
class ModelClient(Protocol):
    """A connection to a model, built lazily by a :class:`Provider`.

    A client may also have a ``prepare()`` method that imports its SDK and builds its
    connection; interactive front ends call it in the background while the user types.

    A client whose ``complete`` returns promptly (raising :class:`Cancelled`) once
    ``request.cancel`` is set, whatever the server does, may say so with a class attribute
    ``watches_cancel = True``: the host then calls it on the turn's own thread instead of
    handing each call to a thread of its own and watching the flag for it (unless
    ``agent.stale_timeout`` is set, which the host enforces by cancelling the request).
    """

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the response; raise :class:`ProviderError` on failure."""
        ...


@dataclass
class ProviderSettings:
    """What the host resolved for a provider: passed to :attr:`Provider.create_client`.

    :param provider: the provider's name.
    :param model: the model name.
    :param base_url: the endpoint (the provider's default when not configured).
    :param api_key: the key, or ``None`` when the provider needs none.
    :param api_mode: the resolved wire format.
    :param timeout: seconds before a request is abandoned.
    :param config: the effective configuration.
    """

    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = None
    api_mode: str = "chat_completions"
    timeout: float = 600.0
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Provider:
    """A named way to reach models.

    :param name: what users type after ``--provider``.
    :param api_mode: the wire format it speaks by default.
    :param create_client: ``create_client(settings) -> ModelClient``; called on first use, so
        the SDK is imported there and never at start-up.
    :param default_base_url: endpoint used when none is configured.
    :param key_env: the environment variable holding its API key (``None``: no key needed).
    :param detect: ``detect(base_url) -> bool``: whether a base URL belongs to this provider.
    :param description: one line for listings.
    :param default_model: model used when none is configured.
    :param api_modes: other wire formats its client can speak (``settings.api_mode`` says which
        one a client is built for).
    """

    name: str
    api_mode: str
    create_client: Callable[[ProviderSettings], ModelClient]
    default_base_url: str | None = None
    key_env: str | None = None
    detect: Callable[[str], bool] | None = None
    description: str = ""
    default_model: str | None = None
    api_modes: tuple[str, ...] = ()


__all__ = [
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "Provider",
    "ProviderSettings",
    "StreamSink",
    "Usage",
]
