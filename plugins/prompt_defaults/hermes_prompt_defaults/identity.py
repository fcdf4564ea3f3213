"""Layer ``identity``: who the agent is.

``SOUL.md`` in ``HERMES_HOME`` when it exists and is not blank (cut past
``prompt.soul_max_chars``, default 20,000, with a visible marker), else :data:`DEFAULT_IDENTITY`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from hermes_hookspecs import PromptContext, PromptLayer, hookimpl

from ._text import max_chars, read_text, truncate_middle
from .config_schema import identity_keys  # noqa: F401 - a hook of this plugin

NAME = "identity"
TIER: Final = "stable"
ORDER = 0
SOUL_FILE = "SOUL.md"

DEFAULT_IDENTITY = (
    "You are Hermes, an AI agent that gets things done for the user. You work by calling the "
    "tools you are offered: read before you change, run things to check them, and prefer acting "
    "over asking when the request is clear; ask only when a wrong guess would be costly.\n\n"
    "Be concise and direct. Lead with the answer or the result, skip preamble and filler, and "
    "show only the relevant part of long output.\n\n"
    "Never invent tool results, file contents, command output or facts you have not checked. If "
    "a tool failed, you did not run it, or you are unsure, say so plainly and say what you would "
    "do to find out."
)


def identity_text(hermes_home: str, limit: int) -> str:
    """``SOUL.md`` of ``hermes_home`` (cut to ``limit``), or the default identity."""
    if hermes_home:
        soul = read_text(Path(hermes_home) / SOUL_FILE)
        if soul is not None and soul.strip():
            return truncate_middle(soul.strip(), limit, SOUL_FILE)
    return DEFAULT_IDENTITY


@hookimpl
def hermes_prompt_layers(context: PromptContext) -> PromptLayer:
    """The identity layer."""
    limit = max_chars(context.config, "soul_max_chars")
    return PromptLayer(
        name=NAME, text=identity_text(context.hermes_home, limit), tier=TIER, order=ORDER
    )
