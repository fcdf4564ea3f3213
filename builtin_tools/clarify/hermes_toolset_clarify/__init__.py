"""The ``clarify`` toolset: one tool that asks the user a question and returns the answer.

It runs alone (``sequential``), since a person can answer one question at a time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_hookspecs import Tool, ToolError, Toolset, hookimpl

if TYPE_CHECKING:
    from hermes_hookspecs import ToolContext

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1, "description": "The question to ask."},
        "choices": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": 8,
            "description": "Optional answers to choose from.",
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}


def clarify(args: dict[str, Any], ctx: ToolContext) -> str:
    """Ask the user ``question`` (with optional ``choices``) and return the answer."""
    choices = args.get("choices") or None
    answer = ctx.clarify(args["question"], choices)
    if not str(answer).strip():
        raise ToolError("the user gave no answer; proceed with your best judgement")
    return f"The user answered: {answer}"


@hookimpl
def hermes_register_toolsets(register: Any) -> None:
    """Register the ``clarify`` toolset."""
    register(
        Toolset(
            name="clarify",
            description="Ask the user a clarifying question",
            tools=[
                Tool(
                    name="clarify",
                    description=(
                        "Ask the user a question when the request is ambiguous and a wrong "
                        "guess would be costly. Prefer acting when the answer is reasonably clear."
                    ),
                    parameters=PARAMETERS,
                    handler=clarify,
                    sequential=True,
                )
            ],
        )
    )
