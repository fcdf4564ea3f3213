"""``hermes memory show | edit | clear``, for the home's owner or, with ``--person ID``, for one
person a gateway serves (their files are in ``<home>/people/<ID>/memories``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

TARGETS = ("memory", "user")
"""Kept here so that building the command line does not import the store module."""

TARGET_HELP = "memory (MEMORY.md, the agent's notes) or user (USER.md, what it knows of you)."

person_option = click.option(
    "--person",
    metavar="ID",
    help="The memory of this person (a gateway's user); default: the home's owner (yours).",
)


def _store(person: str | None = None) -> Any:
    """The store of ``person`` (``None``: the owner) in the active home: the CLI's
    (``CommandContext.home``, ``-p`` profiles included), else the default one.

    :raises HermesError: ``person`` is not a valid person id (one line, exit code 1).
    """
    from hermes_hookspecs import person_home
    from hermes_runtime.home import default_home

    from .store import MemoryStore, limits_from_config

    root = click.get_current_context().find_root().obj
    found = getattr(root, "home", None)
    home = person_home(Path(found) if found else default_home(), person)
    try:
        config = getattr(getattr(root, "config", None), "data", None)
    except Exception:  # a broken config.yaml: the default limits still let the user look
        config = None
    return MemoryStore(home, limits_from_config(config))


def _targets(target: str | None) -> list[str]:
    return [target] if target else list(TARGETS)


@click.group("memory")
def memory_group() -> None:
    """Show, edit or clear the agent's memory (MEMORY.md and USER.md)."""


@memory_group.command("show")
@click.option("--target", type=click.Choice(TARGETS), help=f"Only {TARGET_HELP}")
@person_option
def show(target: str | None, person: str | None) -> None:
    """Print the memory files with their usage of the character limits."""
    from .store import header

    store = _store(person)
    for n, name in enumerate(_targets(target)):
        snap = store.snapshot(name)
        if n:
            click.echo()
        click.echo(f"{header(name, snap.used, snap.limit)}  {store.path(name)}")
        click.echo(snap.text if snap.entries else "(empty)")


@memory_group.command("edit")
@click.option(
    "--target",
    type=click.Choice(TARGETS),
    default="memory",
    show_default=True,
    help=TARGET_HELP,
)
@person_option
def edit(target: str, person: str | None) -> None:
    """Open a memory file in $EDITOR; entries are separated by a line holding only '§'."""
    from .store import TARGETS as FILES
    from .store import MemoryStoreError, fmt, read_text

    store = _store(person)
    path = store.path(target)
    original = read_text(path, strict=False)
    edited = click.edit(original, extension=".md", require_save=True)
    if edited is None or edited == original:
        click.echo(f"No changes to {path}.")
        return
    try:
        snap = store.set_text(target, edited, expected=original)
    except MemoryStoreError as exc:
        kept = path.with_name(path.name + ".edited")
        kept.write_text(edited, encoding="utf-8")
        raise click.ClickException(f"{exc}; your version was not saved, it is in {kept}") from None
    click.echo(f"Saved {path}: {snap.summary()}.")
    if snap.used > snap.limit:
        click.echo(
            f"warning: {FILES[target]} is {fmt(snap.used - snap.limit)} chars over its limit; "
            "the agent can only shorten or remove entries until it fits",
            err=True,
        )


@memory_group.command("clear")
@click.option("--target", type=click.Choice(TARGETS), help=f"Only {TARGET_HELP}")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@person_option
def clear(target: str | None, yes: bool, person: str | None) -> None:
    """Delete the memory files (both unless --target)."""
    from .store import TARGETS as FILES

    store = _store(person)
    snaps = [s for s in (store.snapshot(t) for t in _targets(target)) if s.entries]
    if not snaps:
        whose = f" ({person})" if person else ""
        click.echo(
            f"Memory{whose} is already empty."
            if not target
            else f"{FILES[target]}{whose} is empty."
        )
        return
    what = " and ".join(s.summary() for s in snaps)
    if not yes and not click.confirm(f"Clear {what}? This cannot be undone", default=False):
        click.echo("Nothing was cleared.", err=True)
        click.get_current_context().exit(1)
    for snap in snaps:
        store.clear(snap.target)
        click.echo(f"Cleared {store.path(snap.target)}.")
