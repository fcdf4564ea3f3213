"""Where the paths a delete command names really lead, worked out where the files are.

The checker reads ``rm -rf build/`` as deleting build output inside the working folder; when
``build`` is a symlink (or passes through a symlinked folder) the files deleted are elsewhere.
:func:`resolve_deletes` follows every symlink of each delete operand: in the local environment
with :func:`os.path.realpath` from the command's folder, in every other environment with the
shell script of :mod:`.realpaths`. The answer for each operand is the real path when a
symlink takes it outside the working folder (or to the folder itself), ``None`` when the operand
is what it says; an operand missing from the answer could not be resolved and the checker then
asks (fail closed).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from .realpaths import is_local, lexical, real_paths

__all__ = ["resolve_deletes"]


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name) if isinstance(config, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _classify(lexical: str, real: str, root: str | None) -> str | None:
    """``None`` when ``real`` needs no second look (strictly inside the working folder, or no
    symlink on the way); else ``real``, for the checker to judge."""
    if root:
        top = root.rstrip("/")
        if real != root and (not top or real.startswith(top + "/")):
            return None
    return None if real == lexical else real


def resolve_deletes(
    env: Any, paths: Sequence[str], workdir: str | None, config: Mapping[str, Any]
) -> dict[str, str | None]:
    """Map each delete operand (relative ones from the folder the command starts in: the
    environment's current folder, or ``workdir`` from it) to the real path the checker must
    see as well, or to ``None``; operands that could not be resolved are left out."""
    if is_local(env):
        return _resolve_local(env, paths, workdir, config)
    return _resolve_remote(env, paths, workdir)


# --- the local environment --------------------------------------------------------------------


def _resolve_local(
    env: Any, paths: Sequence[str], workdir: str | None, config: Mapping[str, Any]
) -> dict[str, str | None]:
    base = str(env.cwd)
    if workdir:
        base = os.path.join(base, os.path.expanduser(str(workdir)))
    start = str(_section(config, "terminal").get("cwd") or "").strip()
    try:
        start = os.path.abspath(os.path.expanduser(start)) if start else os.getcwd()
        root: str | None = os.path.realpath(start)
    except (OSError, ValueError):
        root = None
    answers: dict[str, str | None] = {}
    for path in paths:
        try:
            joined = os.path.join(base, os.path.expanduser(path))
            # realpath from the unfolded path: `link/..` is the parent of the link's target
            real = os.path.realpath(joined)
            lexical = os.path.normpath(joined)
        except (OSError, ValueError, TypeError):
            continue  # left out: the checker asks
        answers[path] = _classify(lexical, real, root)
    return answers


# --- every other environment: a shell script where the files are ---------------------------


def _resolve_remote(env: Any, paths: Sequence[str], workdir: str | None) -> dict[str, str | None]:
    reported = getattr(env, "home_cwd", None)
    start = reported if isinstance(reported, str) and reported.startswith("/") else None
    answer = real_paths(env, [start or "/", *paths], cwd=workdir)
    if answer is None:
        return {}
    root = answer.reals[0] if start else None
    resolved: dict[str, str | None] = {}
    for path, real in zip(paths, answer.reals[1:], strict=True):
        if real is not None:
            resolved[path] = _classify(lexical(path, answer.pwd, answer.home), real, root)
    return resolved
