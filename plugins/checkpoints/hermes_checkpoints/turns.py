"""The hooks' work: a checkpoint before each turn's first change, a record after each change.

A turn is a task (``ToolContext.task_id``). The first call of a turn to a tool that may change
the workspace takes the checkpoint; the turn's later calls only mark themselves in flight. After
each such call the tree the turn left so far is recorded (the ledger of
:mod:`hermes_checkpoints.ledger`). A turn whose checkpoint cannot be taken has its changes
refused (fail closed) with one line saying why and how to go on without checkpoints.

Not recorded, with one logged line per turn: a remote backend (``terminal.backend`` other than
``local``: the files are not this machine's), an agent without a hermes home (a configuration
given as a mapping: there is no place for the store), a workspace that is ``/`` or the home
folder.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from hermes_hookspecs import Block, ToolCall, ToolContext

from .catalog import Checkpoint
from .operations import checkpoint_before_turn, open_workspace, record_after
from .rewind import messages_so_far
from .running import mark, unmark
from .settings import Settings, backend_of, may_change_workspace, workspace_of
from .snapshot import Workspace

log = logging.getLogger("hermes.checkpoints")

MAX_TURNS = 512
"""Turns remembered per process (the oldest finished ones are forgotten)."""


@dataclass
class Turn:
    """What one turn settled: its workspace and checkpoint (``None`` when it takes none), and
    the markers of its calls in flight."""

    settings: Settings
    workspace: Workspace | None = None
    checkpoint: Checkpoint | None = None
    markers: dict[str, Path] = field(default_factory=dict)
    ready: threading.Lock = field(default_factory=threading.Lock)
    settled: bool = False


_turns: OrderedDict[str, Turn] = OrderedDict()
_turns_lock = threading.Lock()


def _turn(task_id: str, settings: Settings) -> Turn:
    with _turns_lock:
        turn = _turns.get(task_id)
        if turn is None:
            turn = _turns[task_id] = Turn(settings)
            while len(_turns) > MAX_TURNS:
                oldest = next(iter(_turns))
                if _turns[oldest].markers:
                    break
                del _turns[oldest]
        else:
            _turns.move_to_end(task_id)
        return turn


def _why_not(context: ToolContext, root: Path) -> str:
    """Why this turn takes no checkpoint (one line), or ``""``."""
    backend = backend_of(context.config)
    if backend != "local":
        return (
            f"terminal.backend is {backend}: its files are not on this machine, so hermes "
            "takes no checkpoint of them"
        )
    if context.data_home is None:
        return "the agent has no hermes home (a configuration given as a mapping): no checkpoint"
    home = os.path.realpath(os.path.expanduser("~"))
    if str(root) in ("/", home):
        what = "/" if str(root) == "/" else "the home folder"
        return f"the workspace {root} is {what}: no checkpoint"
    if not root.is_dir():
        return f"the workspace {root} is not a folder: no checkpoint"
    return ""


def _enclosing_turn(data_home: Path, root: Path, turn: Turn) -> Turn | None:
    """Another turn of this process with a call in flight in the same workspace and store: the
    parent whose ``delegate_task`` runs this subagent (or a turn running beside this one).
    Its checkpoint covers this turn too, so the ledger stays one line of time: a checkpoint of
    its own, taken in the middle of the other turn, would make the other turn's later changes
    look like changes by hand."""
    from .store import Store

    store = Store.of(data_home).path
    with _turns_lock:
        for other in _turns.values():
            if (
                other is not turn
                and other.markers
                and other.workspace is not None
                and other.checkpoint is not None
                and other.workspace.root == root
                and other.workspace.store.path == store
            ):
                return other
    return None


def _settle(turn: Turn, call: ToolCall, context: ToolContext) -> Block | None:
    """Take the turn's checkpoint (or decide it takes none); a ``Block`` when it failed."""
    from .store import CheckpointError

    root = workspace_of(context.config)
    reason = _why_not(context, root)
    if reason:
        log.info("checkpoints: %s", reason)
        turn.settled = True
        return None
    assert context.data_home is not None
    enclosing = _enclosing_turn(context.data_home, root, turn)
    if enclosing is not None:  # a subagent inside a parent's call: the parent's checkpoint
        turn.workspace, turn.checkpoint = enclosing.workspace, enclosing.checkpoint
        turn.settled = True
        return None
    try:
        workspace = open_workspace(context.data_home, root)
        meta: dict[str, object] = {
            "session": context.session_id,
            "task": context.task_id,
            "tool": call.name,
        }
        count = messages_so_far(context)
        if count is not None:  # where the turn began: /rollback can rewind the conversation
            meta["messages"] = count
        turn.checkpoint = checkpoint_before_turn(workspace, turn.settings, meta)
    except (CheckpointError, OSError) as exc:
        return Block(
            f"no checkpoint of the workspace could be taken before this change ({exc}), so it "
            "was not made. The person can fix this, or set checkpoints.enabled: false to go "
            "on without undo."
        )
    turn.workspace = workspace
    turn.settled = True
    return None


def before_call(call: ToolCall, context: ToolContext) -> Block | None:
    """``hermes_pre_tool_call``: settle the turn's checkpoint before its first call that may
    change the workspace, and mark the call in flight."""
    settings = Settings.from_config(context.config)
    if not settings.enabled or not may_change_workspace(call.name, settings):
        return None
    turn = _turn(context.task_id, settings)
    with turn.ready:
        if not turn.settled:
            refused = _settle(turn, call, context)
            if refused is not None:
                return refused
        if turn.workspace is None:
            return None
        store = turn.workspace.store
        with store.lock():
            turn.markers[_call_key(call)] = mark(store, turn.workspace.key, call.name)
    return None


def after_call(call: ToolCall, context: ToolContext) -> None:
    """``hermes_post_tool_call``: record what the turn left after a call that may have changed
    the workspace, and clear its in-flight mark."""
    with _turns_lock:
        turn = _turns.get(context.task_id)
    if turn is None:
        return
    marker = turn.markers.pop(_call_key(call), None)
    if marker is None:
        return
    try:
        if turn.workspace is not None and turn.checkpoint is not None:
            record_after(turn.workspace, turn.settings, turn.checkpoint)
    except Exception as exc:  # the call already ran: report, never fail the result
        log.warning("checkpoints: could not record what %s left: %s", call.name, exc)
    finally:
        unmark(marker)


def _call_key(call: ToolCall) -> str:
    return f"{call.id}#{call.index}"


def forget_turns() -> None:
    """Forget every turn this process remembers (for tests)."""
    with _turns_lock:
        _turns.clear()
