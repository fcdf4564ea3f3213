"""The ``compressor`` context engine: prune old tool output, then summarise the middle.

How a compaction goes (:meth:`Compressor.compress`):

1. Plan, on roles and sizes only: the protected head (the first ``protect_first_n`` messages, on
   the first compaction only), the protected tail (the last ``protect_last_n`` messages, at most
   ``protect_last_tokens``), never cutting an assistant message with tool calls from its
   results; the latest user message is kept wherever it is; an earlier summary is folded into
   the new one.
2. Prune, without the model (:mod:`.prune`). When that alone brings the transcript under half the
   threshold, the compaction stops there.
3. Summarise the middle with the host's auxiliary model (``summarize``), updating the earlier
   summary if there is one; without a model, or when it fails, a plain list of what was dropped
   (and no model call for ``summary_cooldown_seconds``).
4. Put the summary where its role keeps user and assistant alternating.

Two compactions in a row that free less than ``min_savings`` of the transcript stop automatic
compaction for the session; the host's explicit requests (``/compress``, a context overflow)
still run.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import ContextEngine, HermesError, Usage

from . import summary as summaries
from .prune import call_index, prune, short
from .tokens import CHARS_PER_TOKEN, estimate, message_tokens

DEFAULTS: dict[str, Any] = {
    "enabled": True,
    "threshold": 0.5,
    "protect_first_n": 3,
    "protect_last_n": 20,
    "protect_last_tokens": None,
    "prune_min_chars": 400,
    "summary_max_tokens": 4096,
    "summary_input_chars": 120_000,
    "summary_cooldown_seconds": 600.0,
    "min_savings": 0.1,
}
"""Settings under ``compression`` in config.yaml, and their defaults."""

SUMMARY_MIN_TOKENS = 1024
"""The least answer length a summary request allows."""
PRUNED_ENOUGH = 0.5
"""Pruning alone ends a compaction when it brings the estimate under this share of the
threshold (and no focus was asked for)."""
STOP_AFTER = 2
"""Ineffective compactions in a row that stop automatic compaction."""

_KINDS: dict[str, tuple[type | tuple[type, ...], float | None, float | None]] = {
    # key: (types, lowest, highest)
    "enabled": (bool, None, None),
    "threshold": ((int, float), 0.0, 1.0),
    "protect_first_n": (int, 0, None),
    "protect_last_n": (int, 0, None),
    "protect_last_tokens": (int, 1, None),
    "prune_min_chars": (int, 0, None),
    "summary_max_tokens": (int, 256, None),
    "summary_input_chars": (int, 1_000, None),
    "summary_cooldown_seconds": ((int, float), 0, None),
    "min_savings": ((int, float), 0.0, 1.0),
}


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    """The engine's settings from ``config`` (the ``compression`` section), checked."""
    settings = dict(DEFAULTS)
    for key, (kinds, low, high) in _KINDS.items():
        value = config.get(key)
        if value is None:
            continue
        ok = isinstance(value, kinds) and (kinds is bool or not isinstance(value, bool))
        if ok and low is not None and value < low:
            ok = False
        if ok and high is not None and value > high:
            ok = False
        if not ok or (key == "threshold" and value == 0):
            raise HermesError(f"compression.{key}: invalid value {value!r}")
        settings[key] = value
    return settings


def _role(message: dict[str, Any] | None) -> str | None:
    return None if message is None else message.get("role")


def _summary_role(before: str | None, after: str | None) -> str | None:
    """The role a summary between messages of roles ``before`` and ``after`` can take without
    two user or two assistant messages in a row (``None``: neither can)."""
    if before != "user" and after != "user":
        return "user"
    if before not in (None, "assistant") and after != "assistant":
        return "assistant"
    return None


def unit_starts(messages: list[dict[str, Any]]) -> list[int]:
    """Where each unit starts, then ``len(messages)``: a unit is one user or assistant message,
    with the tool results that follow it (so a cut at a unit start never separates tool calls
    from their results)."""
    starts: list[int] = []
    for index, message in enumerate(messages):
        if starts and message.get("role") == "tool":
            continue
        starts.append(index)
    starts.append(len(messages))
    return starts


@dataclass
class Plan:
    """What a compaction keeps, by message index."""

    head_end: int
    """``messages[:head_end]`` are kept first."""
    tail_start: int
    """``messages[tail_start:]`` is the protected tail: its tool output is not pruned."""
    keep: list[int]
    """Kept after the summary, in order: possibly one unit from the middle, the latest user
    message when it is not in the head or the tail, then the tail."""
    middle: list[int]
    """Summarised."""
    earlier: list[int]
    """Earlier summaries, folded into the new one."""
    pinned: int | None
    """The latest user message, when the middle would otherwise have taken it."""
    role: str | None
    """The summary's role; ``None`` when it goes in front of the first kept (user) message."""


@dataclass
class _Stats:
    compressions: int = 0
    ineffective: int = 0
    stopped: bool = False
    cooldown_until: float = 0.0
    last: dict[str, Any] | None = None


class Compressor(ContextEngine):
    """Prunes old tool output, then summarises the middle of the conversation.

    Settings (``compression`` in config.yaml): ``enabled``, ``threshold`` (share of the context
    window), ``protect_first_n``, ``protect_last_n``, ``protect_last_tokens``,
    ``prune_min_chars``, ``summary_max_tokens``, ``summary_input_chars``,
    ``summary_cooldown_seconds`` and ``min_savings``; see :data:`DEFAULTS`.
    """

    name = "compressor"

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config)
        self.settings = _settings(self.config)
        self.clock: Callable[[], float] = time.monotonic
        """The clock of the cooldown (replaceable in tests)."""
        self.prompt_tokens: int | None = None
        """The prompt size the provider last reported."""
        self._stats = _Stats()
        self._seen: tuple[list[dict[str, Any]], int] | None = None
        self._anchor: tuple[list[dict[str, Any]], int, int] | None = None

    # --- the contract ---------------------------------------------------------------------

    @property
    def threshold_tokens(self) -> int:
        """The prompt size that triggers a compaction (0 while the window is unknown)."""
        return int(self.context_window * float(self.settings["threshold"]))

    @property
    def automatic(self) -> bool:
        """Whether the engine asks for compaction by itself."""
        return bool(self.settings["enabled"]) and not self._stats.stopped

    def on_session_start(self, session_id: str) -> None:
        """A new conversation: forget the last one's figures."""
        self._stats = _Stats()
        self.prompt_tokens = None
        self._seen = self._anchor = None

    def update_from_response(self, usage: Usage) -> None:
        """Remember the real prompt size, and which messages it was for."""
        if usage.input_tokens > 0:
            self.prompt_tokens = usage.input_tokens
            if self._seen is not None:
                self._anchor = (self._seen[0], self._seen[1], usage.input_tokens)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Whether the prompt just reported reached the threshold."""
        threshold = self.threshold_tokens
        return (
            self.automatic
            and threshold > 0
            and prompt_tokens is not None
            and prompt_tokens >= threshold
        )

    def should_compress_preflight(self, messages: list[dict[str, Any]]) -> bool:
        """Whether the request about to be sent reaches the threshold: the last real prompt size
        plus an estimate of the messages added since (about 4 characters a token), or an
        estimate of everything when there is no real figure for this transcript."""
        self._seen = (messages, len(messages))
        threshold = self.threshold_tokens
        if not self.automatic or threshold <= 0:
            return False
        anchor = self._anchor
        if anchor is not None and anchor[0] is messages and anchor[1] <= len(messages):
            tokens = anchor[2] + estimate(messages[anchor[1] :])
        else:
            tokens = estimate(messages)
        return tokens >= threshold

    def status(self) -> dict[str, Any]:
        """Tokens used, threshold, window, compactions so far, and whether compaction is on."""
        stats = self._stats
        cooldown = max(0.0, stats.cooldown_until - self.clock())
        return {
            "engine": self.name,
            "context_window": self.context_window,
            "threshold": self.settings["threshold"],
            "threshold_tokens": self.threshold_tokens,
            "prompt_tokens": self.prompt_tokens,
            "compressions": stats.compressions,
            "automatic": self.automatic,
            "ineffective_in_a_row": stats.ineffective,
            "summary_cooldown_seconds": round(cooldown),
            "last_compression": dict(stats.last) if stats.last else None,
        }

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus: str | None = None,
    ) -> list[dict[str, Any]]:
        """Return the compacted transcript (see the module docstring)."""
        started = time.perf_counter()
        original = list(messages)
        expanded, split = _expand(original)
        sizes = [message_tokens(message) for message in expanded]
        before = sum(sizes)
        calls = call_index(expanded)
        plan = self.plan(expanded, sizes)
        minimum = int(self.settings["prune_min_chars"])
        pruned, saved = prune(expanded, plan.tail_start, minimum, calls)
        pruned_tokens = before - saved // CHARS_PER_TOKEN
        kind = "pruned"
        result: list[dict[str, Any]]
        threshold = self.threshold_tokens
        small = threshold > 0 and pruned_tokens <= threshold * PRUNED_ENOUGH
        if not plan.middle and not plan.earlier:  # nothing to summarise (and nothing was split)
            result = pruned
        elif not plan.middle:
            previous = self._previous(expanded, plan)
            result = self._assemble(pruned, plan, previous)
            kind = "moved"
        elif small and focus is None and not split:
            result = pruned
        else:
            previous = self._previous(expanded, plan)
            middle_tokens = sum(sizes[i] for i in plan.middle)
            body, kind = self._summarise(expanded, plan, previous, focus, calls, middle_tokens)
            result = self._assemble(pruned, plan, body)
        after = pruned_tokens if result is pruned else estimate(result)
        self._record(before, after, len(original), len(result), kind, current_tokens, started)
        self._anchor = None
        return result

    # --- planning --------------------------------------------------------------------------

    def plan(self, messages: list[dict[str, Any]], sizes: list[int] | None = None) -> Plan:
        """Decide what to keep, summarise and fold (``messages`` as :func:`_expand` left them;
        ``sizes``: their estimated tokens, when already known)."""
        if sizes is None:
            sizes = [message_tokens(message) for message in messages]
        count = len(messages)
        starts = unit_starts(messages)
        last_unit = starts[-2] if count else 0

        # The tail: the last protect_last_n messages, whole units, at least the last unit.
        tail = max(0, count - int(self.settings["protect_last_n"]))
        tail = min(starts[bisect.bisect_right(starts, tail) - 1], last_unit)
        cap = self._tail_cap()
        if cap:
            at = starts.index(tail)
            size = sum(sizes[tail:])
            while size > cap and starts[at] < last_unit:
                size -= sum(sizes[starts[at] : starts[at + 1]])
                at += 1
            tail = starts[at]
        earlier = [
            i for i, m in enumerate(messages) if m.get("role") != "tool" and summaries.is_summary(m)
        ]
        if earlier and earlier[-1] >= tail:  # fold the earlier summary: the tail starts after it
            tail = starts[bisect.bisect_right(starts, earlier[-1])]

        # The head: whole units within the first protect_first_n messages, first compaction only.
        head = 0
        if not earlier:
            limit = min(int(self.settings["protect_first_n"]), tail)
            head = starts[bisect.bisect_right(starts, limit) - 1]

        last_user = next(
            (
                i
                for i in range(count - 1, -1, -1)
                if messages[i].get("role") == "user" and i not in earlier
            ),
            None,
        )
        pinned = last_user if last_user is not None and head <= last_user < tail else None
        skip = set(earlier)
        if pinned is not None:
            skip.add(pinned)
        middle = [i for i in range(head, tail) if i not in skip]
        keep = ([pinned] if pinned is not None else []) + list(range(tail, count))

        while True:
            before = _role(messages[head - 1]) if head else None
            after = _role(messages[keep[0]]) if keep else None
            role = _summary_role(before, after)
            if role is not None:
                break
            if after == "user":
                # Keep the unit before that user message as well, when the middle has one that
                # does not end with a user message (one can, when a summary stood between).
                candidates = [i for i in middle if i < keep[0]]
                if candidates and _role(messages[candidates[-1]]) != "user":
                    first = starts[bisect.bisect_right(starts, candidates[-1]) - 1]
                    unit = [i for i in middle if first <= i <= candidates[-1]]
                    middle = [i for i in middle if i not in unit]
                    keep = unit + keep
                    continue
            if not head:
                break  # the summary goes in front of the first kept (user) message
            # Give up the head's last unit: it is summarised (or kept, if it is the request).
            first = starts[bisect.bisect_right(starts, head - 1) - 1]
            unit = list(range(first, head))
            head = first
            if last_user is not None and unit == [last_user]:
                pinned = last_user
                keep.insert(0, last_user)
            else:
                middle = unit + middle
        return Plan(head, tail, keep, middle, earlier, pinned, role)

    def _tail_cap(self) -> int | None:
        cap = self.settings["protect_last_tokens"]
        if cap:
            return int(cap)
        threshold = self.threshold_tokens
        return threshold // 2 if threshold else None

    # --- summarising -----------------------------------------------------------------------

    def _previous(self, messages: list[dict[str, Any]], plan: Plan) -> str | None:
        bodies = [summaries.split_summary(messages[i])[0] for i in plan.earlier]
        bodies = [body for body in bodies if body]
        return "\n\n".join(bodies) if bodies else None

    def _summarise(
        self,
        messages: list[dict[str, Any]],
        plan: Plan,
        previous: str | None,
        focus: str | None,
        calls: dict[str, tuple[str, str]],
        middle_tokens: int,
    ) -> tuple[str, str]:
        """The summary body of the middle, and whether the model (``"model"``) or the fallback
        (``"fallback"``) wrote it."""
        middle = [messages[i] for i in plan.middle]
        stats = self._stats
        now = self.clock()
        if self.summarize is None:
            reason = "no model is available to the context engine"
        elif now < stats.cooldown_until:
            reason = "the summary model failed recently"
        else:
            shown = sorted(plan.middle + ([plan.pinned] if plan.pinned is not None else []))
            rendered = summaries.render(
                [messages[i] for i in shown],
                shown,
                calls,
                plan.pinned,
                int(self.settings["summary_input_chars"]),
            )
            request = summaries.request(rendered, len(middle), previous, focus)
            limit = int(self.settings["summary_max_tokens"])
            budget = max(min(SUMMARY_MIN_TOKENS, limit), min(limit, middle_tokens // 5))
            try:
                text = self.summarize(request, budget)
            except Exception as exc:  # any failure of the model falls back
                reason = f"the summary request failed: {short(str(exc) or type(exc).__name__, 200)}"
            else:
                body = _clean_summary(text)
                if body:
                    return body, "model"
                reason = "the model returned an empty summary"
            cooldown = float(self.settings["summary_cooldown_seconds"])
            stats.cooldown_until = now + cooldown
            self._say(
                f"compression: {reason}; kept a plain list of what was removed instead; "
                f"no new summary attempt for {cooldown:g}s"
            )
        return summaries.fallback(middle, previous, reason), "fallback"

    def _assemble(
        self, pruned: list[dict[str, Any]], plan: Plan, body: str | None
    ) -> list[dict[str, Any]]:
        out = pruned[: plan.head_end]
        kept = [pruned[i] for i in plan.keep]
        if body is None:
            return out + kept
        if plan.role is None and kept and kept[0].get("role") == "user":
            return out + [summaries.merge_into_user(kept[0], body)] + kept[1:]
        summary = {
            "role": plan.role or "user",
            "content": summaries.summary_text(body),
            summaries.SUMMARY_FLAG: True,
        }
        return out + [summary] + kept

    # --- book-keeping ----------------------------------------------------------------------

    def _record(
        self,
        before: int,
        after: int,
        count_before: int,
        count_after: int,
        kind: str,
        current_tokens: int | None,
        started: float,
    ) -> None:
        stats = self._stats
        stats.compressions += 1
        freed = before - after
        if before <= 0 or freed < before * float(self.settings["min_savings"]):
            stats.ineffective += 1
        else:
            stats.ineffective = 0
        stats.last = {
            "messages_before": count_before,
            "messages_after": count_after,
            "tokens_before": before,
            "tokens_after": after,
            "reported_tokens": current_tokens,
            "summary": kind,
            "seconds": round(time.perf_counter() - started, 4),
        }
        if stats.ineffective >= STOP_AFTER and not stats.stopped:
            stats.stopped = True
            self._say(
                f"compression freed almost nothing {stats.ineffective} times in a row "
                f"(~{before:,} -> ~{after:,} tokens); automatic compression is off for this "
                "session. /compress still works; /new starts a fresh session."
            )

    def _say(self, text: str) -> None:
        notify = self.notify
        if notify is not None:
            try:
                notify(text)
            except Exception:  # a broken status line must not break compaction
                pass


def _expand(
    messages: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], bool]:
    """Split summaries merged in front of a user message back into two messages; whether any
    was split."""
    split = False
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "user" and summaries.is_summary(message):
            body, rest = summaries.split_summary(message)
            if rest is not None:
                out.append(
                    {
                        "role": "user",
                        "content": summaries.summary_text(body),
                        summaries.SUMMARY_FLAG: True,
                    }
                )
                out.append(rest)
                split = True
                continue
        out.append(message)
    return out, split


def _clean_summary(text: Any) -> str:
    """The model's answer as a summary body: text only, without a marker it may have echoed."""
    if not isinstance(text, str):
        return ""
    body = text.strip()
    if body.startswith(summaries.SUMMARY_MARKER):
        body = summaries.split_summary({"content": body})[0]
    return body.replace(summaries.END_MARKER, "").strip()
