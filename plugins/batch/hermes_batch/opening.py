"""Where a home keeps its batch runs: the run table (SQLite in ``$HERMES_HOME/batch.db``, or
the PostgreSQL database ``store.url`` names) and each run's folder of workspaces and exports
(``$HERMES_HOME/batch/<run>/``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import HermesError

from .table import RunTable

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_name(name: str) -> str:
    """``name`` when it is a valid run name; else a one-line :class:`HermesError`."""
    if not NAME.fullmatch(name):
        raise HermesError(
            f"bad run name {name!r}: use up to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def store_url(config: Mapping[str, Any]) -> str | None:
    """The configured ``store.url``, if any."""
    store = config.get("store")
    url = store.get("url") if isinstance(store, Mapping) else None
    return str(url) if url else None


def open_table(home: Path, config: Mapping[str, Any]) -> RunTable:
    """The run table of ``home``: in PostgreSQL when ``store.url`` is a ``postgresql://`` URL
    (the machines of a team share it), else in ``batch.db`` beside the session store."""
    url = store_url(config)
    scheme = url.partition(":")[0].lower() if url else ""
    if scheme.startswith(("postgresql", "postgres")):
        from .table_postgres import PostgresRunTable

        try:
            return PostgresRunTable(url or "")
        except Exception as exc:  # psycopg missing, or the server does not answer
            raise HermesError(f"the batch run table in PostgreSQL cannot open: {exc}") from None
    from .table_sqlite import FILE_NAME, SQLiteRunTable

    folder = home
    if scheme == "sqlite" and url:  # sqlite:FOLDER or sqlite:///FOLDER, as the session store
        path = url[len("sqlite:") :]
        path = path[2:] if path.startswith("//") else path
        folder = Path(path).expanduser() if path else home
    return SQLiteRunTable(folder / FILE_NAME)


def run_dir(home: Path, name: str) -> Path:
    """The folder of run ``name``: its workspaces, worker log and exports."""
    return home / "batch" / check_name(name)
