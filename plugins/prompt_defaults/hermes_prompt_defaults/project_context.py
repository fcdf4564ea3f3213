"""Layer ``project_context``: the instructions file of the project being worked on.

One file only, the first found of:

1. ``.hermes.md`` or ``HERMES.md`` in the working directory or a folder above it, up to the root
   of the git repository (the nearest folder holding a ``.git`` entry; outside a repository only
   the working directory is searched);
2. ``AGENTS.md``, ``CLAUDE.md``, ``.cursorrules`` in the working directory.

Blank files are passed over. A file longer than ``prompt.project_context_max_chars`` (default
20,000) keeps its head and tail around a visible marker saying how much was cut. The layer's
header names the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from hermes_hookspecs import PromptContext, PromptLayer, hookimpl

from ._text import max_chars, read_text, truncate_middle
from .config_schema import project_context_keys  # noqa: F401 - a hook of this plugin

NAME = "project_context"
TIER: Final = "context"
ORDER = 50
HERMES_FILES: tuple[str, ...] = (".hermes.md", "HERMES.md")
"""Looked for in the working directory and each folder above it up to the git root."""
CWD_FILES: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md", ".cursorrules")
"""Looked for in the working directory only, after the hermes files."""


def git_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds a ``.git`` entry (a folder, or a file
    in worktrees and submodules), or ``None``."""
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def candidates(cwd: Path) -> Iterator[Path]:
    """Every path that may hold the project context, in the order they are tried."""
    root = git_root(cwd)
    folders = [cwd]
    if root is not None and root != cwd:
        for parent in cwd.parents:
            folders.append(parent)
            if parent == root:
                break
    for folder in folders:
        for name in HERMES_FILES:
            yield folder / name
    for name in CWD_FILES:
        yield cwd / name


def find_project_file(cwd: Path) -> tuple[Path, str] | None:
    """The first non-blank project context file for ``cwd`` and its text, or ``None``."""
    for path in candidates(cwd):
        text = read_text(path)
        if text is not None and text.strip():
            return path, text
    return None


def display_name(path: Path, cwd: Path) -> str:
    """``path`` relative to ``cwd`` (``AGENTS.md``, ``../.hermes.md``)."""
    try:
        return os.path.relpath(path, cwd)
    except ValueError:  # another drive on Windows
        return str(path)


def project_context_text(cwd: str, limit: int) -> str:
    """The layer text for working directory ``cwd``, or ``""`` when no file is found."""
    if not cwd:
        return ""
    folder = Path(os.path.abspath(cwd))
    found = find_project_file(folder)
    if found is None:
        return ""
    path, text = found
    name = display_name(path, folder)
    body = truncate_middle(text.strip(), limit, name)
    return (
        f"# Project context: {name}\n"
        f"Instructions for this project, from {name}. Follow them unless the user says"
        f" otherwise.\n\n{body}"
    )


@hookimpl
def hermes_prompt_layers(context: PromptContext) -> PromptLayer:
    """The project context layer (dropped when empty)."""
    limit = max_chars(context.config, "project_context_max_chars")
    return PromptLayer(
        name=NAME, text=project_context_text(context.cwd, limit), tier=TIER, order=ORDER
    )
