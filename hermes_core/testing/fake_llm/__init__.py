"""A local fake LLM server for testing providers with their real SDKs.

It speaks three wire protocols on loopback, answering each request with the next step of a
script, in the format of the endpoint the request came to:

- ``POST …/v1/chat/completions``: OpenAI chat completions (JSON, or ``data:``-only SSE chunks
  ending with ``data: [DONE]`` when the body has ``"stream": true``; a last chunk with empty
  ``choices`` and the ``usage`` when ``stream_options.include_usage`` is true);
- ``POST …/v1/responses``: the OpenAI Responses API (JSON, or ``event:``/``data:`` SSE);
- ``POST …/v1/messages``: Anthropic messages (JSON, or ``event:``/``data:`` SSE);
- ``GET …/v1/models``: a small model list (in a shape both SDKs read).

Any path prefix is accepted (``/openrouter/v1/chat/completions``, ``/anthropic/v1/messages``);
``path`` on each :class:`RecordedRequest` tells a test which URL the client built. Requests to
other paths get a 404 and consume no step.

Steps (``FakeLLM(*steps)``, ``.add(*steps)``, or a JSON list for ``hermes dev fake-llm``):

- a :class:`~hermes_core.testing.Turn` (``text``, ``calls``, ``reasoning``, ``usage``, ``delay``,
  ``finish_reason``) or a ``str`` (a text answer);
- a dict turn, which can say more::

    {"text": "...", "calls": [{"name": "...", "arguments": {...} or "raw text", "id": "..."}],
     "reasoning": "...", "signature": "...",
     "usage": {"input_tokens": n, "output_tokens": n, "cache_read_tokens": n,
               "cache_write_tokens": n, "reasoning_tokens": n},
     "finish_reason": "stop" | "tool_calls" | "length" | "content_filter" (or a native name),
     "chunks": N, "chunk_delay": seconds, "delay": seconds, "model": "...", "headers": {...},
     "break_stream_after": N, "hang_after": N}

  ``chunks`` (default 4) is how many pieces the text, the reasoning and each call's arguments
  are streamed in; ``chunk_delay`` is the pause between SSE events (for interrupting a stream
  mid-way); ``break_stream_after`` sends N SSE events and drops the connection;
  ``hang_after`` sends N events and then stalls until the client goes away. For a JSON answer
  both cut the body in the middle. Without ``usage``, counts are estimated (4 bytes a token).
- an error: ``{"error": {"status": 429, "message": "...", "type": "...", "code": "...",
  "param": "...", "retry_after": 1.5, "headers": {...}}, "delay": seconds}``, answered with
  the body shape of the endpoint's API and a ``Retry-After`` header when ``retry_after`` is
  given; a :class:`hermes_hookspecs.ProviderError` works too (its status, or one from its
  kind; a ``connection`` error without a status drops the connection);
- ``{"hang": true}``: never answer, until the client disconnects or the server stops;
- a function ``f(recorded_request)`` returning any of the above (if it raises, the request
  gets a 500 and the exception is kept in ``FakeLLM.errors``).

When the script runs out a request gets a 500 ``fake-llm: no scripted step left for request N``
(with ``x-should-retry: false``, so the SDKs do not retry it).

Usage counts follow :class:`hermes_hookspecs.Usage`: ``input_tokens`` is the whole prompt, cached
tokens included; on Anthropic's wire, ``input_tokens`` is sent without the cache-read and
cache-write tokens, as that API reports them.
"""

from __future__ import annotations

from .server import FakeLLM
from .steps import RecordedRequest, load_script

__all__ = ["FakeLLM", "RecordedRequest", "load_script"]
