"""What plugin commands exist, remembered between runs so that ``hermes --help`` can list them
without importing a single plugin.

After a run that registered every plugin's commands without any plugin failing, their names and
help texts are written to ``<home>/cache/cli_commands`` with the fingerprint of what decides
them: the hermes version, the interpreter, the import path folders (installing, upgrading or
removing a distribution changes their modification times), the plugin selection and the
configuration file. A run whose fingerprint matches lists the remembered commands; any command
that runs still loads every plugin first, exactly as without the cache. Nothing is written to a
home folder that does not exist, and a broken plugin is never remembered: the next run loads
them all again and reports it.

The file is written with :mod:`marshal`, which needs no import.
"""

from __future__ import annotations

import marshal
import os
import sys

from .. import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:  # a resident process's caller computes the fingerprint: no typing, no pathlib
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any


CACHE_FORMAT = 1
"""Changes whenever the layout of the file changes."""

CachedCommand = tuple[str, str, str | None, str | None, bool, bool | str]
"""A remembered command: name, plugin, short help, help, hidden, deprecated."""


def cache_path(home: Path) -> Path:
    """Where the remembered plugin commands of ``home`` are kept."""
    return home / "cache" / "cli_commands"


def _stat(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def fingerprint(home: str | os.PathLike[str], plugin_names: Sequence[str] | None) -> Any:
    """What decides the plugin commands of ``home``: any change to it means they may differ.

    The configuration is not read: its file, the home's ``.env`` and every ``HERMES_*``
    variable stand for it (they decide ``plugins.disabled`` and what the plugins register)."""
    folder = os.path.normpath(os.fspath(home))
    return (
        CACHE_FORMAT,
        __version__,
        sys.executable,
        tuple((entry, _stat(entry or ".")) for entry in sys.path),
        None if plugin_names is None else tuple(plugin_names),
        tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("HERMES_"))),
        folder,
        _stat(os.path.join(folder, "config.yaml")),
        _stat(os.path.join(folder, ".env")),
    )


def home_of(profile: str | None) -> Path | None:
    """The home folder of ``profile`` (as :func:`hermes_core.config.loading.resolve_home`
    finds it, without importing the configuration); ``None`` for an invalid profile name."""
    import re

    from hermes_runtime.home import default_home

    home = default_home()
    if profile is None:
        return home
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", profile):
        return None
    return home / "profiles" / profile


def load(home: Path, key: Any) -> list[CachedCommand] | None:
    """The commands remembered for ``home`` under ``key``; ``None`` when there are none."""
    try:
        with open(cache_path(home), "rb") as handle:
            stored = marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(stored, tuple) or len(stored) != 2 or stored[0] != key:
        return None
    return list(stored[1])


def save(home: Path, key: Any, commands: list[CachedCommand]) -> None:
    """Remember ``commands`` for ``home`` under ``key`` (never creating ``home`` itself); a
    failure to write is ignored: the cache only saves time."""
    if not home.is_dir():
        return
    path = cache_path(home)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        with open(temporary, "wb") as handle:
            marshal.dump((key, tuple(commands)), handle)
        os.replace(temporary, path)
    except (OSError, ValueError):
        try:
            os.unlink(temporary)
        except OSError:
            pass
