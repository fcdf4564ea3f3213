"""The chat's workspace is never the home folder or ``/``: started there, the interactive chat
asks for a narrower folder, and a one-shot answer is refused in one line naming ``--workdir``.

The workspace is where commands start and what they may write (the sandbox's writable folder,
what checkpoints record): all of a home folder would put every file of the person, and their
credential folders' neighbours, in reach. Remote backends (docker, ssh, modal) are not this
machine's folders and are not checked.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from hermes_hookspecs import HermesError

__all__ = ["too_wide", "workspace_of", "settle_workspace"]


def workspace_of(config: Mapping[str, Any]) -> str:
    """The folder the local backend's commands start in: ``terminal.cwd``, else the current
    folder, with links resolved."""
    terminal = config.get("terminal")
    cwd = terminal.get("cwd") if isinstance(terminal, Mapping) else None
    start = os.getcwd() if cwd in (None, "", ".") else os.path.expanduser(str(cwd))
    return os.path.realpath(start)


def too_wide(folder: str) -> str | None:
    """What ``folder`` (resolved) is in words when it may not be the workspace (``/`` or the
    home folder), else ``None``."""
    if folder == "/":
        return "the whole file system (/)"
    home = os.path.realpath(os.path.expanduser("~"))
    if folder == home:
        return f"your home folder ({home})"
    return None


def _local(config: Mapping[str, Any]) -> bool:
    terminal = config.get("terminal")
    backend = terminal.get("backend") if isinstance(terminal, Mapping) else None
    return (backend or "local") == "local"


def settle_workspace(config: Mapping[str, Any], ask: Callable[[str], str] | None) -> str | None:
    """Check the chat's workspace; return a folder to use instead (``terminal.cwd``), or
    ``None`` to keep it. ``ask(message)`` reads the person's answer (``None``: nobody to ask).

    :raises HermesError: the workspace is too wide and nobody can name another, or the person
        gave none (end of input).
    """
    if not _local(config):
        return None
    where = too_wide(workspace_of(config))
    if where is None:
        return None
    if ask is None:
        raise HermesError(
            f"the workspace would be {where}, which puts everything there in the agent's "
            "reach: start hermes in a project folder, or pass --workdir DIR"
        )
    message = f"hermes would work in {where}; the folder to work in instead (a project): "
    while True:
        try:
            answer = ask(message).strip()
        except (EOFError, KeyboardInterrupt):
            raise HermesError(
                "no workspace given: start hermes in a project folder, or pass --workdir DIR"
            ) from None
        folder = os.path.realpath(os.path.expanduser(answer)) if answer else ""
        if not folder or not os.path.isdir(folder):
            message = f"  {answer or '(nothing)'} is not a folder; the folder to work in: "
            continue
        wide = too_wide(folder)
        if wide is not None:
            message = f"  {wide} is too wide; the folder to work in: "
            continue
        return folder
