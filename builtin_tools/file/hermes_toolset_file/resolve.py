"""Where a path really leads, worked out where the files are, and the workspace writes stay in.

A path is resolved before anything is checked: ``~`` expanded, made absolute from the
environment's working directory, ``.`` and ``..`` folded, and every symlink followed (also a
dangling one, and also in the parent folders). In the local environment this is
:func:`os.path.realpath` on this machine; in every other environment a small POSIX shell script
runs through :meth:`Environment.run` (``realpath -m`` when the sandbox has it, else a loop over
the path's parts with ``readlink``, which busybox has too). When the answer cannot be known the
path is *unresolved* and the callers treat it as needing approval.

The workspace is ``file.workspace`` when it is set; otherwise the folder the environment started
in: ``terminal.cwd`` (or the current folder of this process) for the local environment, the
starting folder the environment reports (``home_cwd`` of the shell-based environments), or the
working directory the first time the file tools used that environment.
"""

from __future__ import annotations

import os
import posixpath
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_policy_commands.paths import is_local, lexical, real_paths

__all__ = ["Place", "Resolution", "is_local", "resolve", "workspace_setting"]


@dataclass(frozen=True)
class Place:
    """One path as the model wrote it and where it leads.

    :param given: the path exactly as the model wrote it.
    :param lexical: absolute, ``~`` expanded, ``.``/``..`` folded, symlinks not followed.
    :param real: every symlink followed; ``None`` when it could not be resolved.
    """

    given: str
    lexical: str
    real: str | None

    @property
    def target(self) -> str:
        """The most precise spelling known: resolved, else absolute, else as given."""
        return self.real or self.lexical or self.given


@dataclass(frozen=True)
class Resolution:
    """The resolved paths of one call, with what the checks need to know about the environment.

    :param places: one per requested path, in order.
    :param workspace: the resolved workspace folder; ``None`` when it could not be resolved.
    :param home: the home folder of the environment's user (``""`` when unknown).
    :param hermes_homes: folders that hold hermes' configuration and secrets.
    """

    places: list[Place]
    workspace: str | None
    home: str = ""
    hermes_homes: tuple[str, ...] = field(default_factory=tuple)

    def inside(self, path: str | None) -> bool:
        """Whether ``path`` (resolved) is the workspace or inside it; ``False`` when either is
        unknown."""
        if not path or not self.workspace:
            return False
        root = self.workspace.rstrip("/")
        return not root or path == root or path.startswith(root + "/")


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name) if isinstance(config, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def workspace_setting(config: Mapping[str, Any]) -> str:
    """``file.workspace`` from the configuration (``""`` when unset)."""
    value = _section(config, "file").get("workspace")
    return str(value).strip() if isinstance(value, str | os.PathLike) else ""


def resolve(env: Any, paths: Sequence[str], config: Mapping[str, Any]) -> Resolution:
    """Resolve ``paths`` (relative ones from the environment's working directory) and the
    workspace, where the files are."""
    if is_local(env):
        return _resolve_local(env, paths, config)
    return _resolve_remote(env, paths, config)


# --- the local environment --------------------------------------------------------------------


def _real(path: str) -> str | None:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None


def _local_hermes_homes() -> tuple[str, ...]:
    homes = []
    explicit = os.environ.get("HERMES_HOME")
    if explicit:
        homes.append(os.path.abspath(os.path.expanduser(explicit)))
    homes.append(os.path.join(os.path.expanduser("~"), ".hermes"))
    found: list[str] = []
    for home in homes:
        for spelling in (home, _real(home)):
            if spelling and spelling not in found:
                found.append(spelling)
    return tuple(found)


def _resolve_local(env: Any, paths: Sequence[str], config: Mapping[str, Any]) -> Resolution:
    cwd = str(env.cwd)

    def lexical(path: str, base: str) -> str:
        # the same spelling the local environment opens (normpath before the kernel sees it)
        return os.path.normpath(os.path.join(base, os.path.expanduser(path)))

    places = []
    for path in paths:
        try:
            absolute = lexical(path, cwd)
        except (TypeError, ValueError):
            places.append(Place(path, "", None))
            continue
        places.append(Place(path, absolute, _real(absolute)))
    start = str(_section(config, "terminal").get("cwd") or "").strip()
    start = os.path.abspath(os.path.expanduser(start)) if start not in ("", ".") else os.getcwd()
    setting = workspace_setting(config)
    root = _real(lexical(setting, start)) if setting else _real(start)
    home = _real(os.path.expanduser("~")) or os.path.expanduser("~")
    return Resolution(places, root, home, _local_hermes_homes())


# --- every other environment: a shell script where the files are ---------------------------


# the working directory of an environment when the file tools first used it (the fallback
# workspace of an environment that reports no starting folder)
_first_seen: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _start_folder(env: Any) -> str:
    reported = getattr(env, "home_cwd", None)
    if isinstance(reported, str) and reported.startswith("/"):
        return reported
    try:
        return _first_seen.get(env, "")
    except TypeError:
        return ""


def _resolve_remote(env: Any, paths: Sequence[str], config: Mapping[str, Any]) -> Resolution:
    start = _start_folder(env)
    setting = workspace_setting(config)
    if setting:
        root = setting if setting.startswith(("/", "~")) or not start else f"{start}/{setting}"
    else:
        root = start or "."
    answer = real_paths(env, [root, *paths])
    answers = answer.reals if answer is not None else [None] * (len(paths) + 1)
    pwd = answer.pwd if answer is not None else None
    if pwd and not start:
        try:
            _first_seen.setdefault(env, pwd)
        except TypeError:
            pass
    home = (answer.home if answer is not None else None) or ""
    places = [
        Place(path, lexical(path, pwd, home), real)
        for path, real in zip(paths, answers[1:], strict=True)
    ]
    hermes_homes = (posixpath.join(home, ".hermes"),) if home else ()
    return Resolution(places, answers[0], home, hermes_homes)
