"""``hermes store migrate``: bring a PostgreSQL session store's schema up to date, and say which
versions it has."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import click

from hermes_hookspecs import HermesError

from .schemes import SCHEMES


@click.group("store")
def store_group() -> None:
    """The PostgreSQL session store: migrate."""


def configured_url(obj: Any) -> str | None:
    """``store.url`` of the invocation's configuration (``HERMES_STORE_URL`` included), or
    the variable itself when there is no configuration to read."""
    config = getattr(obj, "config", None)
    if isinstance(config, Mapping):
        section = config.get("store")
        if isinstance(section, Mapping) and section.get("url"):
            return str(section["url"])
    return os.environ.get("HERMES_STORE_URL") or None


@store_group.command("migrate")
@click.option(
    "--url",
    metavar="URL",
    help="The database (postgresql://USER:PASSWORD@HOST/DATABASE); default: store.url.",
)
def migrate_command(url: str | None) -> None:
    """Apply the schema migrations the database lacks (each once, under a lock: safe while
    hermes runs elsewhere) and print the versions it has."""
    url = url or configured_url(click.get_current_context().find_root().obj)
    if not url:
        raise HermesError(
            "no PostgreSQL database to migrate: pass --url postgresql://USER@HOST/DATABASE, "
            "or set store.url (HERMES_STORE_URL)"
        )
    scheme = url.split(":", 1)[0].lower()
    if scheme not in SCHEMES:
        raise HermesError(
            f"hermes store migrate works on PostgreSQL URLs (postgresql://...), not {scheme}:"
            " the SQLite store migrates itself when it opens"
        )
    from .connections import Connections
    from .schema import SCHEMA_VERSION, migrate

    db = Connections(url)
    conn = db.connect()
    try:
        report = migrate(conn, db.where)
    finally:
        conn.close()
    click.echo(f"session store: {db.where}")
    for version, description, applied_at in report.versions:
        when = applied_at.astimezone()  # the server's time zone may not be this machine's
        mark = "applied now" if version in report.applied else f"{when:%Y-%m-%d %H:%M}"
        click.echo(f"  {version:>3}  {mark:<16}  {description}")
    done = "up to date" if not report.applied else f"migrated ({len(report.applied)} applied)"
    click.echo(f"schema version {report.current} of {SCHEMA_VERSION}: {done}")
