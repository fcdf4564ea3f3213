"""Keeping a person's tools out of the hermes home: a ``hermes_pre_tool_call`` hook that blocks
a call of a gateway's person (``ToolContext.person``) naming a path in the hermes home outside
their own workspace (other people's workspaces, everyone's memory, skills, jobs and sessions),
or a folder that holds the home (a search from ``/``).

The sandbox hides the home from commands; the file tools read and write as hermes itself, so
this is their wall between people. It looks at the arguments that name a place (``path``, the
terminal's ``workdir``, the files a unified diff names), resolved as the tools resolve them:
from the workspace, ``~`` expanded, links followed. Calls of the home's owner are never
looked at.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from hermes_hookspecs import Block, ToolCall, ToolContext, blocked, hookimpl

PLACE_ARGUMENTS = ("path", "workdir")
"""The arguments of a tool call that name a file or folder."""
DIFF_ARGUMENTS = ("diff", "patch")
"""The arguments that may hold a unified diff, whose ``---``/``+++`` lines name files."""
RULE = "person-home"

_DIFF_FILE = re.compile(r"^(?:---|\+\+\+) (?:[ab]/)?([^\t\n]+)", re.MULTILINE)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _places(arguments: Mapping[str, Any]) -> Iterator[str]:
    for key in PLACE_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            yield value
    for key in DIFF_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str):
            for found in _DIFF_FILE.findall(value):
                if found.strip() != "/dev/null":
                    yield found.strip()


def _workspace(config: Mapping[str, Any]) -> str | None:
    terminal = config.get("terminal")
    cwd = terminal.get("cwd") if isinstance(terminal, Mapping) else None
    return os.path.realpath(cwd) if isinstance(cwd, str) and cwd else None


def outside_own(place: str, home: str, workspace: str | None) -> bool:
    """Whether the resolved ``place`` is in the hermes ``home`` outside ``workspace``, or
    holds the home (both real paths)."""
    if _inside(home, place):
        return True
    return _inside(place, home) and not (workspace is not None and _inside(place, workspace))


def forbidden_place(arguments: Mapping[str, Any], context: ToolContext) -> str | None:
    """The first place the call's ``arguments`` name that ``context``'s person may not reach,
    else ``None`` (always ``None`` for the owner's calls)."""
    if context.person is None or context.hermes_home is None:
        return None
    home = os.path.realpath(context.hermes_home)
    workspace = _workspace(context.config)
    start = workspace or os.getcwd()
    for given in _places(arguments):
        lexical = os.path.normpath(os.path.join(start, os.path.expanduser(given)))
        for place in (lexical, os.path.realpath(lexical)):
            if outside_own(place, home, workspace):
                return given
    return None


@hookimpl
def hermes_pre_tool_call(call: ToolCall, context: ToolContext) -> Block | None:
    """Block a person's call that names a place in the hermes home outside their workspace."""
    place = forbidden_place(call.arguments, context)
    if place is None:
        return None
    return Block(
        blocked(
            RULE,
            "this conversation's tools cannot reach hermes's own folder (other people's "
            "workspaces, memory and sessions) outside its workspace",
            place,
        )
    )


__all__ = ["forbidden_place", "hermes_pre_tool_call", "outside_own"]
