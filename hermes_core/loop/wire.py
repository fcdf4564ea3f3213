"""The messages of each model request, built incrementally from a transcript that grows by
appends: repaired, validated, stripped (:func:`~hermes_core.loop.transcript.wire_and_source`)
and with their images made ready (:mod:`hermes_core.loop.images`).

The loop sends its whole transcript before every model call; redoing that work over thousands
of messages would dominate its own cost, so :class:`WireCache` only handles what was appended
since the last request.
"""

from __future__ import annotations

import sys
from typing import Any

from . import images
from .scan import scan
from .transcript import wire_and_source

__all__ = ["WireCache", "with_note"]

_ANCHOR_CALL = {"id": "anchor", "type": "function", "function": {"name": "a", "arguments": "{}"}}
_ANCHORS: dict[Any, list[dict[str, Any]]] = {
    # What a valid transcript ending in a message of this role looks like, as far as the
    # validity of the messages that follow is concerned.
    "user": [{"role": "user", "content": ""}],
    "assistant": [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}],
    "tool": [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": None, "tool_calls": [_ANCHOR_CALL]},
        {"role": "tool", "tool_call_id": "anchor", "content": ""},
    ],
}


class WireCache:
    """The wire messages of a transcript and their source, request after request, scanning
    only what was appended since the last call.

    :meth:`build` gives what :func:`~hermes_core.loop.transcript.wire_and_source` followed by
    :func:`~hermes_core.loop.images.prepare` gives. A transcript replaced by another list
    object, shortened, or whose new messages do not validate after the cached prefix goes
    through the full computation again. The dicts in the returned lists are shared between
    calls: treat them as read-only. The lists are the caller's; but copying a long transcript
    for every request (and freeing the copy after it) would cost more than the rest of the
    loop, so when nothing but the cache refers to the last call's lists any more (the request
    that held them is gone) and they end as they did, they are cut back and extended instead.

    Images are made ready on every call (a ``file://`` image is read again, so a file that is
    gone becomes a note), but only the messages that hold one are looked at.
    """

    def __init__(self) -> None:
        self._out: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
        """The lists the last call returned."""
        self._out_marks: tuple[Any, ...] = ()
        """What those lists were when returned: system prompt, ready items, lengths, ends."""
        self._messages: list[dict[str, Any]] | None = None
        self._source: list[dict[str, Any]] = []
        """The validated prefix of the transcript (a copy of its items)."""
        self._wire: list[dict[str, Any]] = []
        """The stripped messages of ``_source``, item for item."""
        self._done = 0
        """How many messages of ``_source`` have their tool results' images added; always
        right after a message that is not a tool result (or 0), where no run of results is
        open."""
        self._ready_wire: list[dict[str, Any]] = []
        self._ready_source: list[dict[str, Any]] = []
        self._file_images: list[int] = []
        """Positions in ``_ready_wire`` of the messages that hold ``file://`` images."""

    def build(
        self,
        messages: list[dict[str, Any]],
        system_prompt: str | None,
        describe: images.Describe | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The wire messages of a request for ``messages`` and their source, aligned as
        :func:`~hermes_core.loop.transcript.wire_and_source` aligns them; ``describe`` as for
        :func:`~hermes_core.loop.images.prepare`."""
        if not self._extend(messages):
            wire, source = wire_and_source(messages, system_prompt)
            if source is not messages or not messages:  # repaired: nothing worth keeping
                self._forget()
                return images.prepare(wire, source, describe)
            self._remember(messages, wire[len(wire) - len(source) :])
        self._advance()
        tail_wire, tail_source = images.with_result_images(
            self._wire[self._done :], self._source[self._done :]
        )
        wire, source = self._ready_lists(system_prompt)
        wire += tail_wire
        source += tail_source
        offset = 0 if system_prompt is None else 1
        for position in self._file_images:
            wire[offset + position] = images.ready(self._ready_wire[position], describe)
        offset += len(self._ready_wire)
        for position, message in enumerate(tail_wire):
            if images.has_file_images(message):
                wire[offset + position] = images.ready(message, describe)
        self._out = wire, source
        self._out_marks = _marks(system_prompt, len(self._ready_wire), wire, source)
        return wire, source

    def _ready_lists(
        self, system_prompt: str | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The system prompt and the ready messages, and their source: the last call's lists
        cut back and extended when no one else holds them, else new ones."""
        out, self._out = self._out, None
        head = 0 if system_prompt is None else 1
        if out is not None:
            wire, source = out
            del out
            done = self._out_marks[1]
            if (
                _sole(wire) == _SOLE
                and _sole(source) == _SOLE
                and self._out_marks == _marks(system_prompt, done, wire, source)
            ):
                del wire[head + done :]
                del source[done:]
                wire += self._ready_wire[done:]
                source += self._ready_source[done:]
                return wire, source
        wire = [] if system_prompt is None else [{"role": "system", "content": system_prompt}]
        wire += self._ready_wire  # one copy of the long list, not two
        return wire, list(self._ready_source)

    def valid(self, messages: list[dict[str, Any]]) -> bool:
        """Whether ``messages`` is a valid transcript (see
        :func:`~hermes_core.loop.transcript.validate`), checking only what was appended since
        the cache last saw it; the next :meth:`build` goes on from there."""
        if self._extend(messages):
            return True
        wire: list[dict[str, Any]] = []
        if next(scan(messages, wire, strip=True), None) is not None:
            return False
        self._remember(messages, wire)
        return True

    def _extend(self, messages: list[dict[str, Any]]) -> bool:
        """Take in what was appended to the cached transcript; ``False`` when ``messages`` is
        not the cached transcript grown by valid appends."""
        cached = len(self._source)
        if not (
            cached
            and messages is self._messages
            and len(messages) >= cached
            and messages[cached - 1] is self._source[-1]
        ):
            return False
        anchor = _ANCHORS.get(self._source[-1].get("role"))
        if anchor is None:
            return False
        tail = messages[cached:]
        if not tail:
            return True
        out: list[dict[str, Any]] = []
        if next(scan(anchor + tail, out, strip=True, system_first=False), None) is not None:
            return False
        self._wire.extend(out[len(anchor) :])
        self._source.extend(tail)
        return True

    def _remember(self, messages: list[dict[str, Any]], wire: list[dict[str, Any]]) -> None:
        """Start over from ``messages``, valid as they are, and their stripped ``wire``."""
        self._forget()
        self._messages = messages
        self._source = list(messages)
        self._wire = wire

    def _forget(self) -> None:
        self._out = None
        self._messages, self._source, self._wire = None, [], []
        self._done = 0
        self._ready_wire, self._ready_source, self._file_images = [], [], []

    def _advance(self) -> None:
        """Add the tool results' images to the messages up to the last one that is not a tool
        result; those before it can no longer change."""
        end = len(self._source)
        while end > self._done and self._source[end - 1].get("role") == "tool":
            end -= 1
        if end <= self._done:
            return
        wire, source = images.with_result_images(
            self._wire[self._done : end], self._source[self._done : end]
        )
        start = len(self._ready_wire)
        self._file_images.extend(
            start + position
            for position, message in enumerate(wire)
            if images.has_file_images(message)
        )
        self._ready_wire.extend(wire)
        self._ready_source.extend(source)
        self._done = end


def _sole(items: list[dict[str, Any]]) -> int:
    """The reference count of ``items`` seen from here: :data:`_SOLE` when only the caller's
    variable refers to it (on an interpreter without reference counts, never)."""
    count = getattr(sys, "getrefcount", None)
    return count(items) if count is not None else -1


def _probe() -> int:
    items: list[dict[str, Any]] = []
    return _sole(items)


_SOLE = _probe()


def _marks(
    system_prompt: str | None,
    ready: int,
    wire: list[dict[str, Any]],
    source: list[dict[str, Any]],
) -> tuple[Any, ...]:
    """What tells returned lists apart from lists changed since (at either end)."""
    return (
        system_prompt,
        ready,
        len(wire),
        len(source),
        wire[0] if wire else None,
        wire[-1] if wire else None,
        source[-1] if source else None,
    )


def with_note(
    wire: list[dict[str, Any]], source: list[dict[str, Any]], text: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``wire`` (a request's messages, made from ``source``) with ``text`` added for the model
    to read now: at the end of the last message when it is the user's, else as a new user
    message (which ``source`` gets too, so the two stay aligned). The lists are new; the last
    message is replaced, never changed."""
    wire = list(wire)
    last = wire[-1] if wire else None
    if last is not None and last["role"] == "user":
        content = last["content"]
        wire[-1] = {
            **last,
            "content": [*content, {"type": "text", "text": text}]
            if isinstance(content, list)
            else f"{content}\n\n{text}",
        }
        return wire, source
    wire.append({"role": "user", "content": text})
    return wire, [*source, wire[-1]]
