"""What ``hermes acp`` keeps of each open session: its folder, mode, model and reasoning
effort, and the ACP modes and config options that show them."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

MODES: dict[str, tuple[str, str]] = {
    "ask": ("Ask", "What the command policy asks about comes to you for a decision"),
    "never-ask": ("Never ask", "What needs approval is refused without asking"),
}
"""The session modes: how approval requests are answered."""

EFFORTS: tuple[str, ...] = ("default", "minimal", "low", "medium", "high")
"""Reasoning efforts a session may pick (``default``: as configured)."""

METADATA_KEY = "acp"
"""The key of a session's metadata under which its folder and choices are stored."""


def new_session_id() -> str:
    """A fresh id in hermes's session id format."""
    return f"session_{uuid.uuid4().hex[:16]}"


@dataclass
class OpenSession:
    """One session an editor has open on this connection."""

    id: str
    cwd: str
    model: str
    mode: str = "ask"
    effort: str = "default"
    rejected: set[str] = field(default_factory=set)
    allowed: set[str] = field(default_factory=set)
    cancel: threading.Event = field(default_factory=threading.Event)
    turn: asyncio.Future[Any] | None = None
    title: str | None = None
    mcp_servers: list[Any] = field(default_factory=list)
    """The MCP servers the client passed in for this session."""
    mcp_tools: list[Any] | None = None
    """Their tools, once started (at the session's first turn)."""
    usage: dict[str, int] = field(default_factory=dict)
    """Tokens the session's turns used on this connection (for ``/usage``)."""

    def count(self, used: Mapping[str, int]) -> None:
        """Add a turn's token counts to :attr:`usage`."""
        for key, value in used.items():
            if value:
                self.usage[key] = self.usage.get(key, 0) + int(value)

    @property
    def busy(self) -> bool:
        """A turn of this session is under way."""
        return self.turn is not None and not self.turn.done()

    def stored_choices(self) -> dict[str, Any]:
        """What is kept in the session's metadata so that a later load finds it again."""
        return {"cwd": self.cwd, "model": self.model, "mode": self.mode, "effort": self.effort}

    def restore_choices(self, metadata: Mapping[str, Any], models: Sequence[str]) -> None:
        """Take back the choices stored with the session (those still valid)."""
        saved = metadata.get(METADATA_KEY)
        if not isinstance(saved, Mapping):
            return
        if saved.get("model") in models:
            self.model = str(saved["model"])
        if saved.get("mode") in MODES:
            self.mode = str(saved["mode"])
        if saved.get("effort") in EFFORTS:
            self.effort = str(saved["effort"])

    def modes(self) -> SessionModeState:
        """The ACP mode state of this session."""
        return SessionModeState(
            current_mode_id=self.mode,
            available_modes=[
                SessionMode(id=key, name=name, description=text)
                for key, (name, text) in MODES.items()
            ],
        )

    def config_options(
        self, models: Sequence[str]
    ) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        """The ACP config options of this session: mode, model and reasoning effort."""

        def select(values: Sequence[tuple[str, str]]) -> list[SessionConfigSelectOption]:
            return [SessionConfigSelectOption(value=v, name=n) for v, n in values]

        return [
            SessionConfigOptionSelect(
                type="select",
                id="mode",
                name="Approvals",
                category="mode",
                current_value=self.mode,
                options=select([(k, name) for k, (name, _text) in MODES.items()]),
            ),
            SessionConfigOptionSelect(
                type="select",
                id="model",
                name="Model",
                category="model",
                current_value=self.model,
                options=select([(m, m) for m in models]),
            ),
            SessionConfigOptionSelect(
                type="select",
                id="reasoning_effort",
                name="Reasoning effort",
                category="thought_level",
                current_value=self.effort,
                options=select([(e, e.capitalize()) for e in EFFORTS]),
            ),
        ]

    def choose(self, option: str, value: Any, models: Sequence[str]) -> None:
        """Set config option ``option`` to ``value``.

        :raises ValueError: an unknown option or a value it does not offer, in one line.
        """
        allowed: dict[str, Sequence[str]] = {
            "mode": tuple(MODES),
            "model": models,
            "reasoning_effort": EFFORTS,
        }
        if option not in allowed:
            raise ValueError(f"unknown config option {option!r} (known: {', '.join(allowed)})")
        if value not in allowed[option]:
            raise ValueError(f"{option} cannot be {value!r} (one of: {', '.join(allowed[option])})")
        if option == "mode":
            self.mode = str(value)
        elif option == "model":
            self.model = str(value)
        else:
            self.effort = str(value)
