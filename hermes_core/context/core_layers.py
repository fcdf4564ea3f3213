"""The core's own prompt layer: the caller's system message.

Registered as a plugin like any other, so a plugin can replace it by returning a layer of the
same name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_hookspecs import hookimpl

if TYPE_CHECKING:
    from hermes_hookspecs import PromptContext, PromptLayer


@hookimpl
def hermes_prompt_layers(context: PromptContext) -> PromptLayer | None:
    """The ``system_message`` given to ``run_conversation``, in the context tier."""
    if not context.system_message:
        return None
    from hermes_hookspecs import PromptLayer  # imported here: start-up never needs it

    return PromptLayer(name="system_message", text=context.system_message, tier="context", order=10)
