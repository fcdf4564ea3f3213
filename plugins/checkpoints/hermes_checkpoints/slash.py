"""``/rollback`` in the chat: list the workspace's checkpoints, or go back to one.

``/rollback`` lists them (1 is the newest; ``*`` marks those of this chat's session).
``/rollback N`` restores the workspace as it was at checkpoint ``N`` and rewinds the
conversation to where that turn began (:mod:`hermes_checkpoints.rewind`); ``--files`` restores
only the files, ``--chat`` only rewinds the conversation; paths after ``N`` limit the restore to
them. The chat runs it between turns, so no turn of this chat is changing the workspace.
"""

from __future__ import annotations

import shlex

from hermes_hookspecs import HermesError, SlashCommand, SlashContext, SlashOutcome

__all__ = ["ROLLBACK"]

USAGE = "[N [--files|--chat] [PATH...]]"


def _arguments(text: str) -> tuple[str | None, bool, bool, tuple[str, ...]]:
    """The checkpoint, whether to restore files and rewind the chat, and the paths."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise HermesError(f"cannot read the arguments ({exc}); usage: /rollback {USAGE}") from None
    flags = {w for w in words if w.startswith("--")}
    unknown = flags - {"--files", "--chat"}
    if unknown or flags == {"--files", "--chat"}:
        raise HermesError(f"usage: /rollback {USAGE} (--files or --chat, not both)")
    rest = [w for w in words if not w.startswith("--")]
    spec = rest[0] if rest else None
    if spec is None and flags:
        raise HermesError(f"which checkpoint? usage: /rollback {USAGE}")
    paths = tuple(rest[1:])
    if paths and "--chat" in flags:
        raise HermesError("paths limit the files restored: they do not go with --chat")
    files = "--chat" not in flags
    chat = "--files" not in flags and not paths
    return spec, files, chat, paths


def _list(context: SlashContext) -> None:
    from .catalog import list_checkpoints
    from .cli import _what, _when
    from .operations import open_workspace
    from .settings import workspace_of

    workspace = open_workspace(context.data_home, workspace_of(context.config), create_store=False)
    checkpoints = list_checkpoints(workspace) if workspace.store.exists() else []
    if not checkpoints:
        context.echo(f"  no checkpoints of {workspace.root} yet")
        return
    for number, checkpoint in enumerate(checkpoints[:20], 1):
        mine = "*" if checkpoint.meta.get("session") == context.session_id else " "
        context.echo(
            f"  {number:>2}{mine} {checkpoint.id}  {_when(checkpoint.time)}  {_what(checkpoint)}"
        )
    more = (
        f" ({len(checkpoints) - 20} older: hermes checkpoints list)"
        if len(checkpoints) > 20
        else ""
    )
    context.echo(
        f"  * this session; /rollback N restores the files and rewinds the chat to that turn{more}"
    )


def rollback(arguments: str, context: SlashContext) -> SlashOutcome | None:
    """``/rollback [N [--files|--chat] [PATH...]]`` (see the module's docstring)."""
    from .store import CheckpointError

    spec, files, chat, paths = _arguments(arguments)
    if spec is None:
        _list(context)
        return None
    try:
        return _go_back(context, spec, files, chat, paths)
    except (CheckpointError, OSError) as exc:
        raise HermesError(str(exc)) from None


def _go_back(
    context: SlashContext, spec: str, files: bool, chat: bool, paths: tuple[str, ...]
) -> SlashOutcome | None:
    from .catalog import list_checkpoints, resolve
    from .cli import restore_lines
    from .operations import open_workspace, restore
    from .paths import relative_to_workspace
    from .rewind import fork, plan_rewind
    from .settings import Settings, workspace_of

    workspace = open_workspace(context.data_home, workspace_of(context.config), create_store=False)
    if not workspace.store.exists():
        raise HermesError(f"no checkpoints of {workspace.root} yet")
    target = resolve(list_checkpoints(workspace), spec)
    store = context.session_store()
    # planned first: a rewind that cannot be made leaves the files alone too
    plan = plan_rewind(store, context.session_id, target) if chat else None
    if files:
        try:
            only = [
                relative_to_workspace(workspace.root_bytes, p, str(workspace.root)) for p in paths
            ]
        except ValueError as exc:
            raise HermesError(str(exc)) from None
        report = restore(workspace, Settings.from_config(context.config), target.id, only, False)
        for line in restore_lines(report, list_checkpoints(workspace)):
            context.echo(f"  {line}")
    if plan is None:
        return None
    rewound = fork(store, plan)
    context.echo(
        f"  the conversation is back before that turn ({rewound.kept} messages kept); the "
        f"whole conversation stays in session {context.session_id}"
    )
    if rewound.message:
        context.echo(f"  that turn began with: {rewound.message[:300]}")
    return SlashOutcome(switch_to=rewound.session_id)


ROLLBACK = SlashCommand(
    name="rollback",
    summary="list checkpoints, or restore one and rewind the chat to that turn",
    handler=rollback,
    usage=USAGE,
)
"""The ``/rollback`` command."""
