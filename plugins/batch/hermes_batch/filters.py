"""The quality filters this plugin ships (``--filter NAME``), registered through its own hook
like any other plugin's:

- ``reasoning``: discard a row whose assistant never gave its reasoning;
- ``tool-names``: discard a row in which the model called a tool that does not exist;
- ``turns``: discard a row that ran out of turns (``--max-turns``) before its final answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hermes_hookspecs import HermesError

from .rowrun import Filter
from .trajectory import text_of


def no_reasoning(row: Mapping[str, Any], output: Mapping[str, Any]) -> str | None:
    """Why a row without any reasoning is dropped."""
    answers = [m for m in output.get("messages") or [] if m.get("role") == "assistant"]
    if not any(m.get("reasoning") for m in answers):
        return "no reasoning in any answer"
    return None


def unknown_tool(row: Mapping[str, Any], output: Mapping[str, Any]) -> str | None:
    """Why a row in which the model called a tool that does not exist is dropped."""
    for message in output.get("messages") or []:
        if message.get("role") == "tool":
            text = text_of(message.get("content"))
            if text.startswith("Error: unknown tool"):
                return text.partition(".")[0].removeprefix("Error: ")
    return None


def over_turns(row: Mapping[str, Any], output: Mapping[str, Any]) -> str | None:
    """Why a row that ran out of turns is dropped."""
    if output.get("status") == "max_iterations":
        return "it ran out of turns before a final answer"
    return None


BUILTIN: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], str | None]] = {
    "reasoning": no_reasoning,
    "tool-names": unknown_tool,
    "turns": over_turns,
}


def chosen_filters(names: Sequence[str], registered: Mapping[str, Any]) -> list[tuple[str, Filter]]:
    """The filters ``names`` among those ``registered``, in that order; a one-line
    :class:`HermesError` naming what exists for an unknown name."""
    found = []
    for name in names:
        if name not in registered:
            known = ", ".join(sorted(registered)) or "none"
            raise HermesError(f"no batch filter named {name!r} (installed: {known})")
        found.append((name, registered[name]))
    return found
