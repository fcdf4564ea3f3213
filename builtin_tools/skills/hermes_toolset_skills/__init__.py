"""The ``skills`` toolset: reusable instructions the agent loads when a task calls for them.

A skill is ``$HERMES_HOME/skills/[<category>/]<name>/SKILL.md`` (YAML front matter with ``name``
and ``description``, then markdown), with optional files beside it: the Agent Skills convention,
so existing skills can be copied in. Three tools (``skills_list``, ``skill_view``,
``skill_manage``), a skills index and guidance in the system prompt, and ``hermes skills list``.

A person a gateway serves reads the home's skills as shared, read-only ones and writes their own
in ``$HERMES_HOME/people/<person>/skills`` (see :mod:`.scope`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_hookspecs import Tool, Toolset, hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin

if TYPE_CHECKING:
    from hermes_hookspecs import PromptContext, PromptLayer, ToolContext

INDEX_MAX_CHARS = 4000
"""Default cap of the skills index in the system prompt (``skills.index_max_chars``)."""
LINE_MAX_CHARS = 200
"""A longer index line is cut with ``…``."""

NAME = {
    "type": "string",
    "description": "The skill's name, or category/name (see skills_list).",
}
FILE = {
    "type": "string",
    "description": "A path relative to the skill folder, e.g. references/api.md.",
}

LIST_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "description": "Only the skills of this category."},
    },
    "additionalProperties": False,
}

VIEW_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": NAME,
        "file": {**FILE, "description": FILE["description"] + " Omit it to read SKILL.md."},
    },
    "required": ["name"],
    "additionalProperties": False,
}

MANAGE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": ["create", "edit", "patch", "delete"],
            "description": (
                "create a skill (or, with file, a new file in it); edit: replace its whole "
                "content; patch: replace old_text with new_text; delete the skill (or, with "
                "file, one file of it)."
            ),
        },
        "name": {
            "type": "string",
            "description": (
                "The skill's name: lowercase letters, digits and hyphens, at most 64 "
                "(e.g. deploy-k8s). category/name is accepted."
            ),
        },
        "category": {
            "type": "string",
            "description": "create only: an optional category folder, same rules as name.",
        },
        "content": {
            "type": "string",
            "description": (
                "create, edit: the whole file. A SKILL.md starts with front matter:\n---\n"
                "name: <name>\ndescription: <what it does and when to use it, at most 1024 "
                "chars>\n---\nthen the instructions in markdown."
            ),
        },
        "old_text": {"type": "string", "description": "patch: the exact text to replace."},
        "new_text": {"type": "string", "description": "patch: the text to put instead."},
        "file": {
            **FILE,
            "description": FILE["description"] + " Omit it to work on SKILL.md or the skill.",
        },
    },
    "required": ["action", "name"],
    "additionalProperties": False,
}


def _handler(name: str) -> Any:
    """Load the tools module when a tool is first called (the plugin stays cheap to import)."""

    def call(args: dict[str, Any], ctx: ToolContext) -> Any:
        from . import tools

        return getattr(tools, name)(args, ctx)

    call.__name__ = name
    return call


@hookimpl
def hermes_register_toolsets(register: Any) -> None:
    """Register the ``skills`` toolset."""
    register(
        Toolset(
            name="skills",
            description="Reusable skills (SKILL.md folders): list, load, create and improve",
            tools=[
                Tool(
                    name="skills_list",
                    description=(
                        "List the available skills (name, category, description), optionally "
                        "of one category."
                    ),
                    parameters=LIST_PARAMETERS,
                    handler=_handler("skills_list"),
                ),
                Tool(
                    name="skill_view",
                    description=(
                        "Load a skill: its SKILL.md instructions and the list of its other "
                        "files, or one of those files with file."
                    ),
                    parameters=VIEW_PARAMETERS,
                    handler=_handler("skill_view"),
                ),
                Tool(
                    name="skill_manage",
                    description=(
                        "Create, edit, patch or delete a skill in the user's skills folder. Save "
                        "a skill after a task that took real effort or that will come back; fix a "
                        "skill that turned out wrong or incomplete."
                    ),
                    parameters=MANAGE_PARAMETERS,
                    handler=_handler("skill_manage"),
                ),
            ],
        )
    )


GUIDANCE_VIEW = (
    "Skills are instructions for particular kinds of task, written down from experience. Before "
    "you start a task, check the skills index; when a skill matches, load it with skill_view and "
    "follow it."
)
GUIDANCE_MANAGE = (
    "After finishing a task that took real effort or will come back, or when the user corrected "
    "your approach, save what worked as a skill (skill_manage create), or fix the skill you used "
    "(skill_manage patch). Keep a skill focused on one kind of task and free of one-off details."
)


def index_text(skills: list[Any], limit: int) -> str:
    """``Skills (category/name: description)`` lines, cut to ``limit`` characters."""
    lines = []
    for skill in skills:
        line = f"{skill.ref}: {skill.description}"
        if len(line) > LINE_MAX_CHARS:
            line = line[: LINE_MAX_CHARS - 1] + "…"
        lines.append(line)
    if not lines:
        return ""
    head = "Skills index (load one with skill_view before a task it covers):"
    reserve = 1 + len(_more(len(lines)))
    out, used = [head], len(head)
    for n, line in enumerate(lines):
        last = n == len(lines) - 1
        if used + 1 + len(line) + (0 if last else reserve) > limit:
            out.append(_more(len(lines) - n))
            break
        out.append(line)
        used += 1 + len(line)
    return "\n".join(out)


def _more(count: int) -> str:
    return f"… and {count} more: call skills_list to see them all"


def _index_limit(config: Any) -> int:
    section = (config or {}).get("skills") or {}
    value = section.get("index_max_chars") if hasattr(section, "get") else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return INDEX_MAX_CHARS


@hookimpl
def hermes_prompt_layers(context: PromptContext) -> list[PromptLayer] | None:
    """Guidance and the skills index (both tier ``stable``), when ``skill_view`` is offered. The
    index lists the skills of the session's person (``context.person``): the owner's, or for a
    person the home's shared skills and their own (see :mod:`.scope`).

    A malformed skill is left out with a logged warning; nothing here can break the prompt."""
    if "skill_view" not in context.tool_names:
        return None
    from pathlib import Path

    from hermes_hookspecs import PromptLayer
    from hermes_runtime.home import default_home

    from .catalog import log, log_problems
    from .scope import roots_for

    home = Path(context.hermes_home) if context.hermes_home else default_home()
    roots = roots_for(home, context.person)
    root = roots.own
    try:
        every = roots.scan()
        log_problems(every, root)
        usable = [s for s in every if s.ok and s.for_this_platform()]
    except Exception as exc:  # never let a skills folder break the prompt
        log.warning("skills index left out: cannot read %s: %s", root, exc)
        usable = []
    can_manage = "skill_manage" in context.tool_names
    if not usable and not can_manage:
        return None
    guidance = GUIDANCE_VIEW + (" " + GUIDANCE_MANAGE if can_manage else "")
    return [
        PromptLayer(name="skills.guidance", text=guidance, tier="stable", order=310),
        PromptLayer(
            name="skills.index",
            text=index_text(usable, _index_limit(context.config)),
            tier="stable",
            order=320,
        ),
    ]


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """Add ``hermes skills list | show``."""
    from .commands import skills_group

    cli.add_command(skills_group)
