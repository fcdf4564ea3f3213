"""Layer ``session_facts``: the date the conversation started, the model and the provider.

It comes last (volatile tier), so everything before it stays a cacheable prefix across sessions.
The date is ``context.date`` (date only), never the clock, so the stored prompt replays byte for
byte.
"""

from __future__ import annotations

from typing import Final

from hermes_hookspecs import PromptContext, PromptLayer, hookimpl

NAME = "session_facts"
TIER: Final = "volatile"
ORDER = 1000


def facts_text(context: PromptContext) -> str:
    """One ``Label: value`` line per known fact."""
    facts = (
        ("Conversation started", context.date),
        ("Model", context.model),
        ("Provider", context.provider),
    )
    return "\n".join(f"{label}: {value}" for label, value in facts if value)


@hookimpl
def hermes_prompt_layers(context: PromptContext) -> PromptLayer:
    """The session facts layer."""
    return PromptLayer(name=NAME, text=facts_text(context), tier=TIER, order=ORDER)
