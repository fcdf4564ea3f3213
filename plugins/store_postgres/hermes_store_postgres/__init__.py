"""Sessions in PostgreSQL, for a team: ``store.url: postgresql://user:password@host/database``.

Registers the URL schemes ``postgresql`` and ``postgres`` (``hermes_register_session_stores``)
and the command ``hermes store migrate`` (``hermes_register_commands``). Nothing is imported
from the driver (psycopg) until a store is opened or the command runs. See docs/postgres.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import hookimpl

from .schemes import SCHEMES

if TYPE_CHECKING:
    from .store import PostgresSessionStore

__all__ = ["SCHEMES", "open_store"]


def open_store(url: str, home: Path | None = None) -> PostgresSessionStore:
    """The session store at ``url`` (a ``postgresql://`` or ``postgres://`` URL), its schema
    brought up to date; ``home`` (the hermes home) is not used: everything is in the database.

    :raises hermes_hookspecs.HermesError: the server cannot be reached, refuses the login, or
        its schema is newer than this plugin (one line, naming the server, never the password).
    """
    from .store import PostgresSessionStore

    return PostgresSessionStore(url)


@hookimpl
def hermes_register_session_stores(register: Any) -> None:
    """Serve ``store.url`` for the schemes ``postgresql`` and ``postgres``."""
    for scheme in SCHEMES:
        register(scheme, open_store)


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """Add ``hermes store`` (its module loads when the command runs)."""
    import click

    class LazyStoreGroup(click.Group):
        def _real(self) -> click.Group:
            from .cli import store_group

            return store_group

        def list_commands(self, ctx: click.Context) -> list[str]:
            return self._real().list_commands(ctx)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            return self._real().get_command(ctx, name)

    cli.add_command(LazyStoreGroup("store", help="The PostgreSQL session store: migrate."))
