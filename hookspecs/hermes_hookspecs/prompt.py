"""Prompt layers: the pieces the system prompt is assembled from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Tier = Literal["stable", "context", "volatile"]
TIERS: tuple[str, ...] = ("stable", "context", "volatile")
"""Tiers in the order they are joined: what changes least comes first, for prompt caching."""


@dataclass(frozen=True)
class PromptLayer:
    """One piece of the system prompt.

    :param name: shown by ``hermes prompt show``; a layer from a plugin loaded later replaces
        one of the same name from a plugin loaded earlier (so a third-party plugin can override a
        core layer), keeping the earlier one's position.
    :param text: the text; empty layers are dropped.
    :param tier: ``stable`` | ``context`` | ``volatile``.
    :param order: position within the tier (lower first; ties keep plugin order).
    """

    name: str
    text: str
    tier: Tier = "stable"
    order: int = 100


@dataclass(frozen=True)
class PromptContext:
    """What prompt-layer hooks may look at when the system prompt is built.

    :param model: the model name.
    :param provider: the provider name.
    :param platform: where the agent runs (``cli``, ``cron``, ``gateway``, ``library``...).
    :param system_message: the caller's own system message, if any.
    :param tool_names: names of the tools the model will be offered, sorted.
    :param toolsets: names of the enabled toolsets.
    :param hermes_home: the active ``HERMES_HOME`` folder.
    :param cwd: the working directory.
    :param session_id: the session being started.
    :param date: today's date, ISO format (date only, so the prompt stays byte-stable).
    :param config: the effective configuration.
    :param person: the person the session is for (see :mod:`hermes_hookspecs.people`);
        ``None`` for the home's owner. A layer that shows stored data (memory, say) shows this
        person's, read under :func:`~hermes_hookspecs.person_home`.
    """

    model: str
    provider: str
    platform: str = "cli"
    system_message: str | None = None
    tool_names: tuple[str, ...] = ()
    toolsets: tuple[str, ...] = ()
    hermes_home: str = ""
    cwd: str = ""
    session_id: str = ""
    date: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)
    person: str | None = None


__all__ = ["TIERS", "PromptContext", "PromptLayer"]
