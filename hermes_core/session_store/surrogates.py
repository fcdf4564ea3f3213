"""Text UTF-8 cannot carry: lone surrogates, which sessions written before text was cleaned
where it entered may hold. The stores give them back exactly from ``get_messages``, and
replaced from ``get_clean_messages``, the messages a conversation replays."""

from __future__ import annotations

from typing import Any

__all__ = ["encodable", "replace_surrogates"]


def encodable(value: Any) -> bool:
    """Whether every string in ``value`` (a message, or any JSON value) is encodable as UTF-8."""
    if isinstance(value, str):
        if value.isascii():
            return True
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        for key, item in value.items():  # a loop, not all(): this runs on every tool call
            if not (encodable(key) and encodable(item)):
                return False
        return True
    if isinstance(value, list):
        for item in value:
            if not encodable(item):
                return False
    return True


def replace_surrogates(value: Any) -> Any:
    """A copy of ``value`` (a message, or any JSON value) with every lone surrogate in its
    text replaced by U+FFFD and surrogate pairs joined into their character."""
    if isinstance(value, str):
        if encodable(value):
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {replace_surrogates(k): replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_surrogates(item) for item in value]
    return value
