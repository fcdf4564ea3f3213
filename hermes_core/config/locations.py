"""Where the configuration lives: the hermes home folder (or a profile inside it), created
private."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from hermes_runtime.home import default_home

from .errors import ConfigError

CONFIG_FILE = "config.yaml"
DOTENV_FILE = ".env"

_PROFILE_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"


def resolve_home(profile: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Return the hermes home folder (``$HERMES_HOME`` or ``~/.hermes``), or a profile inside it.

    A profile is a fully separate home at ``<home>/profiles/<profile>``. Nothing is created.
    Raises ConfigError for a profile name outside ``[A-Za-z0-9][A-Za-z0-9_.-]*``.
    """
    home = default_home(environ)
    if profile is None:
        return home
    if not re.fullmatch(_PROFILE_NAME, profile):
        raise ConfigError(
            f"invalid profile name {profile!r}: use letters, digits, '_', '.' and '-', "
            "starting with a letter or digit"
        )
    return home / "profiles" / profile


def ensure_home(home: Path) -> Path:
    """Create the home folder readable by its owner only (mode 700) when it is missing (and,
    for a profile, the main home too); an existing folder keeps its mode."""
    home = Path(home)
    if not home.is_dir():
        if home.parent.name == "profiles":  # a profile: the main home is made private too
            ensure_home(home.parent.parent)
        home.parent.mkdir(parents=True, exist_ok=True)
        try:
            home.mkdir(mode=0o700)
        except FileExistsError:
            return home  # made by another process meanwhile; its mode is its own
        os.chmod(home, 0o700)  # mkdir's mode is narrowed by the umask, never widened
    return home
