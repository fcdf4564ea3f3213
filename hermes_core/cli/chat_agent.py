"""The agent of a chat command: the CLI state's host, with the terminal's callbacks (streamed
text, tool progress, questions and approvals asked at the terminal when there is one)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .display import Display, ask_approval, ask_clarify
from .state import CliState

if TYPE_CHECKING:
    from ..loop.agent import Agent


def make_agent(
    state: CliState,
    *,
    interactive: bool,
    display: Display,
    yolo: bool,
    stream: bool,
    session_id: str | None = None,
) -> Agent:
    """Build the agent for a chat command from the CLI state."""
    from ..loop.events import Callbacks

    can_ask = sys.stdin.isatty()
    callbacks = Callbacks(
        stream_delta=display.text_delta if stream else None,
        tool_progress=display.tool_progress,
        status=display.status if interactive else None,
        thinking=display.thinking if interactive else None,
        approval=(
            (lambda r: display.ask(lambda: ask_approval(display, r), on_interrupt="deny"))
            if can_ask
            else None
        ),
        clarify=(
            (lambda q, c: display.ask(lambda: ask_clarify(display, q, c), on_interrupt=""))
            if can_ask
            else None
        ),
    )
    host = state.host.with_overrides({"agent.platform": "cli", "agent.stream": stream})
    return host.agent(session_id=session_id, callbacks=callbacks, yolo=yolo)
