"""``hermes gateway people``: who the gateway serves and what each person owns, and
``hermes gateway people forget ID``, which deletes one person's memory, sessions and workspace."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from hermes_hookspecs import CommandContext, HermesError, check_person

from .belongings import Belongings, belongings_of, describe, everyone, personal_store
from .errors import GatewaySettingsError
from .hookspecs import TURN_QUEUES_HOOK
from .people import People, load_people
from .routes import Routes, RouteStore
from .settings import queue_settings


def _context() -> CommandContext:
    context: CommandContext = click.get_current_context().find_root().obj
    return context


def _people(context: CommandContext) -> People:
    section = context.config.get("gateway") or {}
    try:
        if not isinstance(section, dict):
            raise GatewaySettingsError(f"config gateway must be a mapping, not {section!r}")
        return load_people(section)
    except GatewaySettingsError as exc:
        raise HermesError(str(exc)) from None


def _routes(home: Path) -> RouteStore:
    try:
        return RouteStore(home / "gateway" / "sessions.json")
    except ValueError as exc:
        raise HermesError(str(exc)) from None


def _team_routes(context: CommandContext) -> Routes | None:
    """The conversations' sessions a team's front ends share (with ``gateway.queue``)."""
    from .team import make_queue_from

    section = context.config.get("gateway") or {}
    try:
        queue = queue_settings(context.config, section) if isinstance(section, dict) else None
    except GatewaySettingsError as exc:
        raise HermesError(str(exc)) from None
    if queue is None:
        return None
    made = make_queue_from(queue, context.registered(TURN_QUEUES_HOOK), lambda line: None)
    return made.routes()


@click.group("people", invoke_without_command=True)
@click.pass_context
def people_group(ctx: click.Context) -> None:
    """The people of the gateway: their platform ids, groups and what each owns (sessions,
    memory, skills, jobs, workspace). `forget ID` deletes one person's data."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_people)


@people_group.command("list")
def list_people() -> None:
    """List every person: configured in gateway.users, or who wrote as a guest."""
    context = _context()
    people = _people(context)
    store = personal_store(context.session_store())
    names = everyone(context.home, store, people)
    if not names:
        click.echo("no people: gateway.users names none and no guest has written yet")
        return
    for name in names:
        click.echo("\n".join(describe(belongings_of(context.home, store, people, name))))


def _plan(owned: Belongings, routes: int) -> list[str]:
    lines = [f"  {len(owned.session_ids)} session(s), with their messages"]
    if routes:
        lines.append(f"  {routes} conversation route(s) (gateway/sessions.json, the team's)")
    if owned.folder is not None:
        held = ", ".join(owned.parts) or "nothing yet"
        lines.append(f"  {owned.folder} ({held})")
    lines += [f"  {workspace} (workspace)" for workspace in owned.workspaces]
    return lines


@people_group.command("forget")
@click.argument("person")
@click.option("--dry-run", is_flag=True, help="Show what would be deleted; delete nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def forget(person: str, dry_run: bool, yes: bool) -> None:
    """Delete everything kept for PERSON: sessions, memory, skills, jobs and workspace."""
    context = _context()
    check_person(person)
    people = _people(context)
    store = personal_store(context.session_store())
    home = context.home
    owned = belongings_of(home, store, people, person)
    routes = _routes(home)
    shared = _team_routes(context)
    routed = routes.leading_to(owned.session_ids)
    if shared is not None:
        routed += shared.leading_to(owned.session_ids)
    if owned.empty and not routed:
        raise HermesError(f"nothing is kept for {person}: no session, no folder, no workspace")
    plan = _plan(owned, routed)
    if dry_run:
        click.echo(f"would forget {person}:\n" + "\n".join(plan))
        return
    if not yes:
        if not sys.stdin.isatty():
            raise HermesError(
                f"forgetting {person} needs a confirmation: run it with --yes (or --dry-run "
                "to see what would go)"
            )
        click.echo(f"this deletes, for good, everything kept for {person}:\n" + "\n".join(plan))
        if not click.confirm(f"forget {person}?", default=False):
            raise HermesError(f"{person} was not forgotten")
    sessions = store.forget_person(person)
    forgotten = routes.forget_sessions(owned.session_ids)
    if shared is not None:
        forgotten += shared.forget_sessions(owned.session_ids)
    for folder in [*([owned.folder] if owned.folder else []), *owned.workspaces]:
        shutil.rmtree(folder)
    folders = len(owned.workspaces) + (1 if owned.folder else 0)
    click.echo(f"forgot {person}: {sessions} session(s), {forgotten} route(s), {folders} folder(s)")
    if owned.configured:
        click.echo(
            f"{person} is still in gateway.users: their next message starts afresh (remove "
            "the entry to refuse them)"
        )
