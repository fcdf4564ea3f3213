"""Layer ``platform``: how to write for the place the agent runs in (``context.platform``).

``cli`` (a terminal), ``cron`` (a scheduled run with no one present) and ``gateway`` (a chat
app) have a hint; ``library`` and any other platform have none.
"""

from __future__ import annotations

from typing import Final

from hermes_hookspecs import PromptContext, PromptLayer, hookimpl

NAME = "platform"
TIER: Final = "stable"
ORDER = 910

HINTS: dict[str, str] = {
    "cli": (
        "You are talking with the user in a terminal. Markdown is fine (code blocks, short "
        "lists; keep tables narrow). Give file paths and commands exactly, so they can be "
        "copied."
    ),
    "cron": (
        "This is a scheduled run and no user is present: nobody can answer a question or "
        "approve an action. Do the task with what you have, make reasonable choices and state "
        "them, and make your final answer self-contained, since it is delivered as it stands."
    ),
    "gateway": (
        "You are talking with the user through a chat app. Keep messages short and "
        "conversational; use little formatting (no tables or large headings), and give the "
        "essentials first rather than long reports."
    ),
}
"""Platform name -> hint. Platforms not listed (``library``...) get no layer."""


@hookimpl
def hermes_prompt_layers(context: PromptContext) -> PromptLayer | None:
    """The platform hint, or nothing for a platform without one."""
    hint = HINTS.get(context.platform)
    if hint is None:
        return None
    return PromptLayer(name=NAME, text=hint, tier=TIER, order=ORDER)
