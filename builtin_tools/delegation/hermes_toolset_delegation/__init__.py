"""The ``delegation`` toolset: ``delegate_task`` hands goals to subagents.

Each child is a fresh agent run through the host's runner (``ToolContext.agents``): its own
transcript (only the goal and context the parent writes), a restricted toolset (never
``clarify``; ``delegation`` only above ``delegation.max_spawn_depth``; ``memory`` read-only), its
own iteration budget, and a session linked to the parent's. Several tasks run in parallel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_hookspecs import Block, Tool, Toolset, hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin

if TYPE_CHECKING:
    from hermes_hookspecs import ToolCall, ToolContext

TOOL_NAME = "delegate_task"

DESCRIPTION = (
    "Hand a self-contained piece of work to a subagent: a fresh agent with its own tools that "
    "works on it and reports back a summary. It sees NOTHING of this conversation, only the "
    "goal and context you write, so include every fact, path, constraint and definition of "
    "done it needs. Use it for work that would flood this conversation with detail (research, "
    "broad searches, multi-step investigations) or for independent tasks that can run in "
    "parallel: pass 'tasks' (a list of {goal, context, toolsets}) to run several subagents at "
    "once; results come back in the order given, each with its status. Subagents cannot ask "
    "the user questions and cannot change memory. Do not delegate trivial steps."
)

_TASK_PROPERTIES: dict[str, Any] = {
    "goal": {
        "type": "string",
        "description": "What the subagent must achieve, and what its summary must contain.",
    },
    "context": {
        "type": "string",
        "description": "Background the subagent needs: facts, file paths, constraints, "
        "what was already tried.",
    },
    "toolsets": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Toolsets to give it (e.g. ['terminal', 'file']); default: your own.",
    },
}

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        **_TASK_PROPERTIES,
        "tasks": {
            "type": "array",
            "description": "Several independent tasks to run in parallel, instead of 'goal'.",
            "items": {
                "type": "object",
                "properties": _TASK_PROPERTIES,
                "required": ["goal"],
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}


def delegate_task(args: dict[str, Any], ctx: ToolContext) -> str:
    """The ``delegate_task`` tool."""
    from .running import delegate

    return delegate(args, ctx)


@hookimpl
def hermes_register_toolsets(register: Any) -> None:
    """Register the ``delegation`` toolset."""
    register(
        Toolset(
            name="delegation",
            description="Delegate tasks to subagents (delegate_task)",
            tools=[
                Tool(
                    name=TOOL_NAME,
                    description=DESCRIPTION,
                    parameters=PARAMETERS,
                    handler=delegate_task,
                )
            ],
        )
    )


@hookimpl
def hermes_pre_tool_call(call: ToolCall, context: ToolContext) -> Block | None:
    """Keep memory read-only for subagents: a child sees the memory snapshot in its prompt, but
    its ``memory`` calls (which all change memory) are refused."""
    if call.name != "memory":
        return None
    depth = (context.config.get("delegation") or {}).get("depth") or 0
    if not depth:
        return None
    return Block(
        "subagents can read memory (it is in your system prompt) but not change it; put what "
        "should be remembered in your final summary instead, and do not retry this call"
    )


__all__ = ["TOOL_NAME", "delegate_task"]
