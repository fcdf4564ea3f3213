"""``hermes checkpoints list | diff N | restore N``: the checkpoints of a workspace.

``N`` is a number of ``list`` (1 is the newest) or a checkpoint's id. The workspace is the
current folder unless ``--workspace`` names another; the store is the home owner's unless
``--person`` names a person a gateway serves.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hermes_hookspecs import CommandContext, HermesError

from .catalog import Checkpoint, list_checkpoints
from .ledger import paths_changed
from .paths import relative_to_workspace, show_path
from .settings import Settings
from .snapshot import Workspace
from .store import Store

if TYPE_CHECKING:
    from .operations import RestoreReport


def _context() -> CommandContext:
    context: CommandContext = click.get_current_context().find_root().obj
    return context


def _workspace(folder: str | None, person: str | None) -> Workspace:
    """The workspace ``folder`` (default: the current one) in the store of ``person``."""
    from hermes_hookspecs.people import person_home

    root = Path(os.path.realpath(folder or os.getcwd()))
    if not root.is_dir():
        raise HermesError(f"the workspace {root} is not a folder")
    return Workspace(Store.of(person_home(_context().home, person)), root)


def _settings() -> Settings:
    return Settings.from_config(_context().config)


def _only(workspace: Workspace, paths: tuple[str, ...]) -> list[bytes]:
    """The paths a person gave, relative to the workspace: a relative one is read from the
    current folder when it lies in the workspace, else from the workspace's folder."""
    here = os.path.realpath(os.getcwd())
    inside = here == str(workspace.root) or here.startswith(str(workspace.root).rstrip("/") + "/")
    base = here if inside else str(workspace.root)  # relative to the workspace from elsewhere
    try:
        return [relative_to_workspace(workspace.root_bytes, p, base) for p in paths]
    except ValueError as exc:
        raise HermesError(str(exc)) from None


def _when(timestamp: float) -> str:
    if not timestamp:
        return "-"
    return _dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def _what(checkpoint: Checkpoint) -> str:
    if checkpoint.kind == "restore":
        return f"before restoring {checkpoint.meta.get('target', '?')}"
    tool = checkpoint.meta.get("tool") or "?"
    session = str(checkpoint.meta.get("session") or "")
    return f"before a turn ({tool}" + (f", session {session})" if session else ")")


def _number(checkpoints: list[Checkpoint], checkpoint: Checkpoint) -> int:
    return next(n for n, c in enumerate(checkpoints, 1) if c.commit == checkpoint.commit)


def _one_line_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """An ``OSError`` becomes hermes's one-line error (exit code 1)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except OSError as exc:
            raise HermesError(f"checkpoints: {exc}") from None

    return wrapper


workspace_option = click.option(
    "--workspace",
    "folder",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="The workspace (default: the current folder).",
)
person_option = click.option(
    "--person",
    metavar="ID",
    help="The checkpoints of this person (a gateway's user); default: the home's owner.",
)


@click.group("checkpoints")
def checkpoints_group() -> None:
    """Checkpoints of the workspace taken before the agent's changes (docs/checkpoints.md)."""


@checkpoints_group.command("list")
@workspace_option
@person_option
@_one_line_errors
def list_command(folder: str | None, person: str | None) -> None:
    """List the workspace's checkpoints, newest first, with the files each turn changed."""
    workspace = _workspace(folder, person)
    checkpoints = list_checkpoints(workspace)
    if not checkpoints:
        click.echo(f"no checkpoints of {workspace.root} yet")
        return
    counts = paths_changed(workspace.store, [(c.tree, c.left) for c in checkpoints])
    rows = [["N", "ID", "TAKEN", "TURN CHANGED", "WHAT"]]
    for number, (checkpoint, changed) in enumerate(zip(checkpoints, counts, strict=True), 1):
        rows.append(
            [
                str(number),
                checkpoint.id,
                _when(checkpoint.time),
                f"{len(changed)} files",
                _what(checkpoint),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        click.echo(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
        )
    click.echo(f"workspace {workspace.root}; `hermes checkpoints restore N` brings one back")


@checkpoints_group.command("diff")
@click.argument("checkpoint")
@click.argument("paths", nargs=-1)
@workspace_option
@person_option
@_one_line_errors
def diff_command(
    checkpoint: str, paths: tuple[str, ...], folder: str | None, person: str | None
) -> None:
    """Show what changed since CHECKPOINT (a number of `list` or an id), as `git diff` does,
    for the whole workspace or the PATHS given."""
    from .operations import diff

    workspace = _workspace(folder, person)
    if not workspace.store.exists():
        raise HermesError("this workspace has no checkpoints yet")
    out = diff(workspace, _settings(), checkpoint, _only(workspace, paths))
    if not out:
        click.echo("no difference")
        return
    click.echo(out, nl=False)  # bytes: file names and contents as they are


@checkpoints_group.command("restore")
@click.argument("checkpoint")
@click.argument("paths", nargs=-1)
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@workspace_option
@person_option
@_one_line_errors
def restore_command(
    checkpoint: str, paths: tuple[str, ...], dry_run: bool, folder: str | None, person: str | None
) -> None:
    """Bring back the workspace (or the PATHS given) as it was at CHECKPOINT.

    Files the person changed by hand since are kept and reported; files over
    checkpoints.max_file_mb, nested repositories and paths behind symbolic links are skipped.
    The state before the restore becomes a checkpoint first: `restore 1` undoes a restore.
    Refused while a call of the agent is changing the workspace.
    """
    from .operations import restore

    workspace = _workspace(folder, person)
    if not workspace.store.exists():
        raise HermesError("this workspace has no checkpoints yet")
    report = restore(workspace, _settings(), checkpoint, _only(workspace, paths), dry_run)
    for line in restore_lines(report, list_checkpoints(workspace)):
        click.echo(line)


def restore_lines(report: RestoreReport, checkpoints: list[Checkpoint]) -> list[str]:
    """What a restore did (``report``), for people: the checkpoint, each change, the nested
    repositories, a summary and how to undo it (``checkpoints``: the workspace's after it)."""
    target, dry_run = report.target, report.dry_run
    lines = [
        f"{'dry run: ' if dry_run else ''}checkpoint {target.id} of {_when(target.time)} "
        f"({_what(target)})"
    ]
    lines += [change.line(dry_run) for change in report.changes]
    lines += [
        f"nested repository: {show_path(nested)} (not restored: it has a history of its own)"
        for nested in report.nested
    ]
    summary = (
        f"{report.count('restore')} restored, {report.count('remove')} removed, "
        f"{report.count('keep')} kept, {report.count('skip')} skipped"
    )
    lines.append(summary + (" (dry run: nothing changed)" if dry_run else ""))
    if report.before is not None:
        number = _number(checkpoints, report.before)
        lines.append(
            f"the state before this restore is checkpoint {number} ({report.before.id}): "
            f"`hermes checkpoints restore {report.before.id}` undoes it"
        )
    return lines
