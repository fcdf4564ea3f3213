"""The token ledger of each model request: its bytes and estimated tokens by part (system
prompt, tool catalogue, tool schemas, deferred schemas, history, new input) and what the
provider reported (input, cached, cache writes).

Each entry is kept on the assistant message the request answered, in :data:`LEDGER_FIELD`
(an internal field: stored with the message, never sent), and logged at debug level;
``hermes sessions show --ledger ID`` prints them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_hookspecs import ModelRequest, Usage

LEDGER_FIELD = "_ledger"
"""Internal field of an assistant message: the ledger entry of the request it answers."""
BYTES_PER_TOKEN = 4
"""The estimate of tokens from bytes (the provider's count is exact; see ``input_tokens``)."""
PARTS = ("system", "catalogue", "tools", "deferred", "history", "new_input")
"""The parts of a request, in the order the ledger shows them. ``deferred`` is the schemas a
native back end sends marked deferred: sent, but kept out of the model's context."""


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "replace"))
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _new_input_start(messages: Sequence[Mapping[str, Any]]) -> int:
    """Where the input new to this request starts: after the last assistant message."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "assistant":
            return index + 1
    return 1 if messages and messages[0].get("role") == "system" else 0


class Sizer:
    """The sizes of one agent's requests, request after request, measuring only what is new.

    A transcript only grows between compactions, and the wire messages of a request are the
    same objects as the last one's (:class:`~hermes_core.loop.wire.WireCache`): the sizes of
    a prefix whose first and last messages are the very objects measured before are taken
    again; anything else is measured anew. Without this, each request would serialise the whole
    history once more (about 78 ms a call at 20,000 messages)."""

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._ends: list[int] = [0]  # _ends[i]: the bytes of the first i messages
        self._tools: tuple[Any, int] | None = None

    def _kept(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """How many of the messages measured before start ``messages``."""
        kept = min(len(self._items), len(messages))
        if kept and (
            self._items[0] is not messages[0] or self._items[kept - 1] is not messages[kept - 1]
        ):
            return 0
        return kept

    def ends(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """The cumulative byte sizes of ``messages`` (``ends[i]``: the first ``i``)."""
        kept = self._kept(messages)
        del self._items[kept:]
        del self._ends[kept + 1 :]
        for message in messages[kept:]:
            self._items.append(message)
            self._ends.append(self._ends[-1] + _size(message))
        return self._ends

    def tools(self, tools: Any) -> int:
        """The bytes of a request's tool schemas (the same list again: measured once)."""
        if self._tools is not None and self._tools[0] is tools:
            return self._tools[1]
        size = _size(tools)
        self._tools = (tools, size)
        return size


def measure(
    request: ModelRequest, catalogue: str | None = None, sizer: Sizer | None = None
) -> dict[str, Any]:
    """The bytes by part of ``request`` (``catalogue``: the catalogue text inside its system
    prompt, counted apart) and their estimated tokens; ``sizer`` keeps what it measured for the
    next request of the same agent."""
    sizer = sizer or Sizer()
    messages = request.messages
    system = messages[0].get("content") if messages and messages[0].get("role") == "system" else ""
    system_bytes = _size(system or "")
    catalogue_bytes = _size(catalogue) if catalogue and catalogue in (system or "") else 0
    start = _new_input_start(messages)
    head = 1 if system else 0
    ends = sizer.ends(messages)
    parts = {
        "system": system_bytes - catalogue_bytes,
        "catalogue": catalogue_bytes,
        "tools": sizer.tools(request.tools) if request.tools else 0,
        "deferred": _size(request.deferred_tools) if request.deferred_sent else 0,
        "history": ends[max(start, head)] - ends[head],
        "new_input": ends[len(messages)] - ends[max(start, head)],
    }
    return {
        "bytes": parts,
        "tokens": {part: -(-size // BYTES_PER_TOKEN) for part, size in parts.items()},
    }


def with_usage(entry: dict[str, Any], usage: Usage, model: str) -> dict[str, Any]:
    """``entry`` with what the provider reported for the request (and which model answered)."""
    return {
        **entry,
        "model": model,
        "reported": {
            "input_tokens": usage.input_tokens,
            "cached_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "output_tokens": usage.output_tokens,
        },
    }


def rows(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ledger entries kept on ``messages``, in request order."""
    return [m[LEDGER_FIELD] for m in messages if isinstance(m.get(LEDGER_FIELD), dict)]


def table(entries: Sequence[Mapping[str, Any]]) -> str:
    """The entries as a text table: one row a request, estimated tokens by part, then what
    the provider reported as input and as cached."""
    header = ["#", *PARTS, "context", "reported", "cached", "hit%"]
    lines = [header]
    for number, entry in enumerate(entries, 1):
        tokens = entry.get("tokens") or {}
        reported = entry.get("reported") or {}
        sent = sum(int(tokens.get(p) or 0) for p in PARTS if p != "deferred")
        given = int(reported.get("input_tokens") or 0)
        cached = int(reported.get("cached_tokens") or 0)
        hit = f"{100 * cached / given:.0f}" if given else "-"
        cells = [str(number), *(str(tokens.get(p, 0)) for p in PARTS), str(sent)]
        lines.append([*cells, str(given), str(cached), hit])
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in lines
    )
