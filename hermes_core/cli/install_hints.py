"""The one command that installs an optional execution backend, for ``hermes doctor``.

The docker, ssh and modal backends are not in the default install. Installed from the package
registry they are extras of the core dist (``pip install "hermes-framework[docker]"``). In a
checkout of the repository (the core installed from its folder) they are installed from their
paths instead, so that pip never takes one of the project's dists from the registry.
"""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

CORE_DIST = "hermes-framework"
OPTIONAL_BACKENDS: dict[str, tuple[str, ...]] = {
    "docker": ("environments/common", "environments/docker"),
    "ssh": ("environments/common", "environments/ssh"),
    "modal": ("environments/common", "environments/modal"),
}
"""Backend name -> the checkout folders of the dists it needs, dependencies first."""


def checkout_root() -> Path | None:
    """The repository folder when the core runs from a checkout, else None."""
    root = Path(__file__).resolve().parents[2]
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if project.get("project", {}).get("name") == CORE_DIST else None


def backend_install_command(backend: str, root: Path | None = None) -> str | None:
    """The pip command that installs the optional ``backend``, or None for an unknown name.

    ``root`` is the checkout to install from (default: the one the core runs from, if any).
    """
    folders = OPTIONAL_BACKENDS.get(backend)
    if folders is None:
        return None
    root = root if root is not None else checkout_root()
    if root is None or not all((root / f / "pyproject.toml").is_file() for f in folders):
        return f'pip install "{CORE_DIST}[{backend}]"'
    here = Path.cwd().resolve() == root.resolve()
    paths = [f"./{f}" if here else str(root / f) for f in folders]
    return "pip install " + " ".join(f"-e {shlex.quote(p)}" for p in paths)


OPTIONAL_COMMANDS: dict[str, tuple[str, str]] = {
    "cron": ("hermes-cron", "plugins/cron"),
    "mcp": ("hermes-toolset-mcp", "plugins/mcp"),
    "gateway": ("hermes-gateway", "plugins/gateway"),
}
"""Command -> the optional dist that adds it and its checkout folder."""
_EXTRAS = {"cron": "cron", "mcp": "mcp", "gateway": "gateway"}


def command_install_command(command: str, root: Path | None = None) -> str | None:
    """The pip command that installs the dist providing ``hermes COMMAND``, or None."""
    found = OPTIONAL_COMMANDS.get(command)
    if found is None:
        return None
    root = root if root is not None else checkout_root()
    folder = found[1]
    if root is None or not (root / folder / "pyproject.toml").is_file():
        return f'pip install "{CORE_DIST}[{_EXTRAS[command]}]"'
    path = f"./{folder}" if Path.cwd().resolve() == root.resolve() else str(root / folder)
    return f"pip install -e {shlex.quote(path)}"


def missing_command_message(error: Exception, argv: list[str]) -> str | None:
    """One line for ``hermes cron|mcp|gateway`` when the dist providing it is not installed
    (click's "No such command"), naming the dist and its install command; None otherwise."""
    message = getattr(error, "message", str(error))
    for command, (dist, _) in OPTIONAL_COMMANDS.items():
        if command in argv and f"No such command '{command}'" in message:
            return (
                f"'hermes {command}' comes with the optional distribution {dist}, which is not "
                f"installed; install it with: {command_install_command(command)}"
            )
    return None


def missing_backend_message(backend: str, installed: list[str]) -> str:
    """One line for a configured backend that no installed plugin provides."""
    names = ", ".join(sorted(installed)) or "none"
    command = backend_install_command(backend)
    if command is None:
        return (
            f"execution backend {backend!r} (terminal.backend) is not provided by any installed "
            f"plugin (installed: {names}); install its plugin or change "
            "terminal.backend"
        )
    return (
        f"execution backend {backend!r} (terminal.backend) is not installed "
        f"(installed: {names}); install it with: {command}"
    )


__all__ = [
    "backend_install_command",
    "checkout_root",
    "command_install_command",
    "missing_backend_message",
    "missing_command_message",
]
