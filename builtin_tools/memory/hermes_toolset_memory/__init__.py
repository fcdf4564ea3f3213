"""The ``memory`` toolset: notes that outlive a session.

Two files in ``$HERMES_HOME/memories``: ``MEMORY.md`` (the agent's own notes) and ``USER.md``
(what it knows about the user). The ``memory`` tool adds, replaces and removes entries; every
change is written to disk at once (atomically, under a lock shared by every process using the same
home). The system prompt shows both files as they were when the session's prompt was built, so
a change made during a session shows from the next session on.

Memory is per person: the home's owner keeps the two files in ``$HERMES_HOME/memories``, and each
person a gateway serves keeps their own in ``$HERMES_HOME/people/<person>/memories``
(:func:`hermes_hookspecs.person_home`). A call or a prompt for one person never reads another's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import Tool, ToolError, Toolset, hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin

if TYPE_CHECKING:
    from hermes_hookspecs import PromptContext, PromptLayer, ToolContext

TOOL_NAME = "memory"

DESCRIPTION = (
    "Save durable facts to persistent memory, which is shown in your system prompt at the start "
    "of every future session. Two stores: target 'memory' for your own notes (the user's "
    "environment, projects, conventions, tool quirks, lessons learned) and target 'user' for "
    "what you know about the user (name, role, preferences, how they like to work). Actions: "
    "'add' a new entry (content); 'replace' the entry that contains old_text with content; "
    "'remove' the entry that contains old_text. Keep entries short and specific; each store has "
    "a character limit, so merge or remove old entries when it fills up. Do not save temporary "
    "task state. Changes are saved at once but show in the system prompt from the next session."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": ["add", "replace", "remove"],
            "description": "add a new entry, replace an entry, or remove an entry.",
        },
        "target": {
            "type": "string",
            "enum": ["memory", "user"],
            "description": "'memory' for your notes, 'user' for what you know about the user.",
        },
        "content": {
            "type": "string",
            "description": "The entry's text (add, replace).",
        },
        "old_text": {
            "type": "string",
            "description": "A unique part of the entry to replace or remove.",
        },
    },
    "required": ["action", "target"],
    "additionalProperties": False,
}

GUIDANCE = (
    "You have persistent memory across sessions: the memory tool. Save to it without being asked "
    "when you learn something that will still matter in a later session: the user's "
    "preferences, corrections and details about them (target 'user'); facts about their "
    "environment, projects, conventions and tools, and lessons from your mistakes (target "
    "'memory'). Do not save task progress, session outcomes or anything easy to find again. "
    "Memory is small: keep entries compact, and replace or merge stale entries rather than "
    "adding near-duplicates. What you save appears in your system prompt from the next session."
)

BAR = "═" * 46


def tool_home(ctx: ToolContext) -> Path:
    """The folder whose ``memories/`` a tool call works in: the call's person's own folder
    (``ctx.data_home``: the home itself for the owner, ``<home>/people/<person>`` for a person)
    of the host's home (``ctx.hermes_home``, it knows the active profile), else of the default
    one (``$HERMES_HOME``, else ``~/.hermes``)."""
    from hermes_hookspecs import person_home
    from hermes_runtime.home import default_home

    return ctx.data_home or person_home(default_home(), ctx.person)


def memory(args: dict[str, Any], ctx: ToolContext) -> str:
    """The ``memory`` tool: add, replace or remove an entry of MEMORY.md or USER.md."""
    from .store import (
        TARGETS,
        MemoryStore,
        MemoryStoreError,
        enabled_from_config,
        limits_from_config,
    )

    action, target = args["action"], args["target"]
    if not enabled_from_config(ctx.config)[target]:
        key = "memory_enabled" if target == "memory" else "user_profile_enabled"
        raise ToolError(f"the {target!r} store is turned off (config memory.{key}: false)")
    store = MemoryStore(tool_home(ctx), limits_from_config(ctx.config))
    try:
        if action == "add":
            if not args.get("content"):
                raise MemoryStoreError("action 'add' needs content: the text of the new entry")
            outcome, snapshot = store.add(target, args["content"])
        elif action == "replace":
            if not args.get("old_text") or not args.get("content"):
                raise MemoryStoreError(
                    "action 'replace' needs old_text (a unique part of the entry to change) "
                    "and content (its new text)"
                )
            outcome, snapshot = store.replace(target, args["old_text"], args["content"])
        else:
            if not args.get("old_text"):
                raise MemoryStoreError(
                    "action 'remove' needs old_text (a unique part of the entry to remove)"
                )
            outcome, snapshot = store.remove(target, args["old_text"])
    except MemoryStoreError as exc:
        raise ToolError(_with_usage(exc, store, target)) from None
    except OSError as exc:
        raise ToolError(
            f"could not save {store.path(target)}: {exc.strerror or exc}; nothing was changed"
        ) from None
    if outcome.startswith("already"):
        return f"Already present in {TARGETS[target]}; nothing changed. {snapshot.summary()}."
    return (
        f"Entry {outcome} ({target}). {snapshot.summary()}. Saved to disk; it shows in the "
        "system prompt from the next session."
    )


def _with_usage(error: Any, store: Any, target: str) -> str:
    """The error's message, with the store's usage when it does not report it already."""
    message = str(error)
    if getattr(error, "has_usage", False):
        return message
    try:
        summary = store.snapshot(target).summary()
    except Exception:  # the error itself may be about reading the file
        return message
    return f"{message}\n({summary})"


@hookimpl
def hermes_register_toolsets(register: Any) -> None:
    """Register the ``memory`` toolset."""
    register(
        Toolset(
            name="memory",
            description="Persistent memory across sessions (MEMORY.md, USER.md)",
            tools=[
                Tool(
                    name=TOOL_NAME,
                    description=DESCRIPTION,
                    parameters=PARAMETERS,
                    handler=memory,
                )
            ],
        )
    )


def snapshot_text(home: Any, config: Any) -> str:
    """The memory block of the system prompt: each non-empty store under a usage header."""
    from .store import MemoryStore, enabled_from_config, header, limits_from_config

    store = MemoryStore(home, limits_from_config(config))
    enabled = enabled_from_config(config)
    blocks = []
    for target in ("memory", "user"):
        if not enabled[target]:
            continue
        snap = store.snapshot(target)
        if not snap.entries:
            continue
        blocks.append(f"{BAR}\n{header(target, snap.used, snap.limit)}\n{BAR}\n{snap.text}")
    return "\n\n".join(blocks)


@hookimpl
def hermes_prompt_layers(context: PromptContext) -> list[PromptLayer] | None:
    """The memory guidance (stable) and the snapshot of both stores (volatile) of the session's
    person (``context.person``; the owner's for ``None``), when the memory tool is offered. The
    core builds the prompt once per session and keeps it: that freezes the snapshot, so writes
    during the session do not change it."""
    if TOOL_NAME not in context.tool_names:
        return None
    from hermes_hookspecs import PromptLayer, person_home
    from hermes_runtime.home import default_home

    base = Path(context.hermes_home) if context.hermes_home else default_home()
    home = person_home(base, context.person)
    return [
        PromptLayer(name="memory.guidance", text=GUIDANCE, tier="stable", order=300),
        PromptLayer(
            name="memory.snapshot",
            text=snapshot_text(home, context.config),
            tier="volatile",
            order=100,
        ),
    ]


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """Add ``hermes memory show | edit | clear``."""
    from .commands import memory_group

    cli.add_command(memory_group)
