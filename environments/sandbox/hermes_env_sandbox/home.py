"""The home folder inside the sandbox: hidden, but for the workspace and an allow-list.

Commands see an empty, read-only home folder (a tmpfs) into which the sandbox binds, read-only,
the toolchain folders ordinary work needs (:data:`DEFAULT_HOME_ALLOW`), the folders of ``PATH``
that lie in the home folder, and what ``terminal.sandbox.home_allow`` adds. Everything else
there (shell history, browser profiles, key rings, a new tool's token file) is absent, whatever
its name. ``~/.gitconfig`` and ``~/.config/git/config`` are shown as copies that keep the user's
name, e-mail and ordinary settings, without credential helpers, tokens, passwords or extra HTTP
headers (:func:`sanitized_git_config`).

Nothing here starts a sandbox: these are the lists, the checks (an allowed path holding a
credential folder is refused) and the git configuration filter the sandbox uses.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import threading
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from hermes_runtime.secret_classes import home_paths, toolchain_paths

from .paths import inside
from .settings import SandboxSettings

__all__ = [
    "DEFAULT_HOME_ALLOW",
    "HIDDEN_IN_HOME",
    "GIT_CONFIG_FILES",
    "HomeEntry",
    "entry_problem",
    "expand_in_home",
    "home_entries",
    "sanitized_git_config",
    "workspace_problem",
]

GIT_CONFIG_FILES = (".gitconfig", ".config/git/config")
"""The user's git configuration, shown as a filtered copy (:func:`sanitized_git_config`)."""

DEFAULT_HOME_ALLOW: tuple[str, ...] = tuple(
    p for p in toolchain_paths() if p not in GIT_CONFIG_FILES
)
"""Paths of the home folder commands see read-only (``*`` expands when the sandbox is made):
the toolchains and package caches that building, testing, git and package installs into the
workspace read, none of which holds credentials. Missing ones are skipped. The list is
``hermes_runtime/secret_classes.toml``'s ``[toolchains]``, which the command policy reads too (a
command reading elsewhere in the home folder asks)."""

HIDDEN_IN_HOME: tuple[str, ...] = home_paths()
"""Credential folders and files of the home folder that no sandboxed command sees: the ``home``
paths of hermes's secret classes (``hermes_runtime/secret_classes.toml``, the list the command
policy reads too). The home folder is hidden anyway; these stay hidden where the workspace holds
the home folder, and no allowed path may hold one."""


OFF_LIMITS = ("/proc", "/sys", "/dev", "/run", "/var/run", "/tmp")
"""Where no allowed path may lead: what the sandbox replaces (``/tmp`` is the task's own,
``/run`` is empty) would show through a path of the home folder leading there."""


class HomeEntry(NamedTuple):
    """A path of the home folder commands see.

    :param path: where commands see it: inside the home folder as it really is (the home's
        ``realpath`` joined with the rest of the path as written).
    :param writable: commands may write there (``home_allow`` with ``writable: true``).
    :param builtin: from :data:`DEFAULT_HOME_ALLOW` or ``PATH`` (skipped quietly when it may not
        be shown) rather than ``terminal.sandbox.home_allow`` (refused, in one line).
    :param target: where it led when the sandbox was made (its ``realpath``): it is shown only
        while it still leads there, so that a link on the way (in the workspace, say) swapped
        by a command cannot point it somewhere else.
    """

    path: str
    writable: bool
    builtin: bool
    target: str


def _tilde(path: str, home: str) -> str:
    """``path`` written from the home folder when it is inside (for messages)."""
    if home != "/" and inside(path, home):
        return "~" + path[len(home) :]
    return path


def expand_in_home(path: str, home: str, named_home: str | None = None) -> str:
    """``path`` (``~/...`` or absolute) as a path under ``home`` (the home folder as it really
    is): ``~`` and the home folder as named (``named_home``, e.g. ``$HOME`` through a link) are
    replaced by ``home``; ``..`` is resolved as written. Other paths are only normalised."""
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    path = os.path.normpath(path)
    if named_home and named_home != home and inside(path, named_home):
        path = home + path[len(named_home) :]
    return path


def workspace_problem(workspace: str, home: str) -> str | None:
    """Why ``workspace`` (as it really is) cannot be a sandboxed workspace, in one line, or
    ``None``: it may be neither ``/`` nor the home folder itself (all of it writable, and the home
    folder would not be hidden)."""
    if workspace == "/":
        where = "the whole file system (/)"
    elif workspace == home:
        where = f"your home folder ({home})"
    else:
        return None
    return (
        f"the sandbox refuses {where} as the workspace (commands could reach all of it, and the "
        "home folder could not be hidden): choose a narrower folder, a project folder, with "
        "terminal.cwd or by starting the chat in it"
    )


_HIDE = "terminal.sandbox.hide"


def entry_problem(path: str, target: str, home: str, hidden: Iterable[str]) -> str | None:
    """Why the path ``path`` of the home folder, which leads to ``target`` (its ``realpath``),
    may not be shown to commands, in words that follow the path's name; ``None`` when it may.

    It must be inside the home folder (not the folder itself), hold none of the ``hidden`` paths
    (credential folders, hermes's home, ``terminal.sandbox.hide``, in both their forms) and lie
    in none of them, and not lead to the home folder or to what the sandbox replaces
    (``/proc``, ``/run``, ``/tmp``...)."""
    if path == home or not inside(path, home):
        return f"is not a path inside the home folder {home}"
    if inside(home, target):
        return f"leads to {target}, which holds the whole home folder"
    for secret in hidden:
        if secret in (path, target):
            where = f"is {_tilde(secret, home)}"
        elif inside(path, secret) or inside(target, secret):
            where = f"lies in {_tilde(secret, home)}"
        elif inside(secret, path) or inside(secret, target):
            return (
                f"holds {_tilde(secret, home)}, which stays hidden (a credential folder, "
                f"hermes's home or {_HIDE}); allow a narrower path"
            )
        else:
            continue
        return f"{where}, which stays hidden (a credential folder, hermes's home or {_HIDE})"
    if not inside(target, home) and any(inside(target, x) for x in OFF_LIMITS):
        return f"leads to {target}, which commands do not see"
    return None


def _builtin_paths(
    home: str, named_home: str, search_path: str | None, prefixes: Sequence[str]
) -> list[str]:
    """The builtin list expanded in ``home``, then the folders of ``search_path`` (``PATH``)
    and ``prefixes`` (this Python's) that lie in the home folder, where they exist."""
    found: list[str] = []
    for pattern in DEFAULT_HOME_ALLOW:
        found += sorted(glob.glob(glob.escape(home) + "/" + pattern))
    folders = (search_path or "").split(os.pathsep) + list(prefixes)
    for folder in folders:
        if not folder.startswith("/"):
            continue  # a relative PATH entry: nothing to show
        path = expand_in_home(folder, home, named_home)
        if path != home and inside(path, home) and os.path.isdir(path):
            found.append(path)
    return list(dict.fromkeys(found))


def home_entries(
    settings: SandboxSettings,
    *,
    home: str,
    named_home: str,
    hidden: Sequence[str],
    search_path: str | None = None,
    prefixes: Sequence[str] = (),
) -> tuple[list[HomeEntry], str | None]:
    """The paths of the home folder commands see under ``settings``, and the first problem of
    ``terminal.sandbox.home_allow`` (one line) or ``None``.

    Builtin paths (:data:`DEFAULT_HOME_ALLOW`, the folders of ``search_path`` and ``prefixes``
    in the home folder) that may not be shown are left out quietly; a ``home_allow`` path that
    may not be shown (see :func:`entry_problem`) is the problem. A path inside another one is
    left out unless it is writable and the other is not. Paths that do not exist are kept (they
    are looked at again for each command)."""
    writable_ok = settings.profile == "workspace"
    entries: list[HomeEntry] = []
    for path in _builtin_paths(home, named_home, search_path, prefixes):
        target = os.path.realpath(path)
        if entry_problem(path, target, home, hidden) is None:
            entries.append(HomeEntry(path, False, True, target))
    for allow in settings.home_allow:
        path = expand_in_home(allow.path, home, named_home)
        target = os.path.realpath(path)
        why = entry_problem(path, target, home, hidden)
        if why:
            return entries, f"terminal.sandbox.home_allow: {allow.path} {why}"
        entries.append(HomeEntry(path, allow.writable and writable_ok, False, target))
    kept: list[HomeEntry] = []
    for entry in sorted(entries, key=lambda e: (e.path.count("/"), e.path, not e.writable)):
        if any(inside(entry.path, k.path) and (k.writable or not entry.writable) for k in kept):
            continue
        kept.append(entry)
    return kept, None


# --- the git configuration ---------------------------------------------------------------

_GIT_SECTIONS = frozenset(
    {
        "advice",
        "alias",
        "am",
        "apply",
        "blame",
        "branch",
        "checkout",
        "clone",
        "color",
        "column",
        "commit",
        "core",
        "diff",
        "difftool",
        "fetch",
        "filter",
        "format",
        "gc",
        "gpg",
        "grep",
        "help",
        "http",
        "i18n",
        "index",
        "init",
        "interactive",
        "log",
        "merge",
        "mergetool",
        "pack",
        "pretty",
        "protocol",
        "pull",
        "push",
        "rebase",
        "rerere",
        "safe",
        "sequence",
        "status",
        "submodule",
        "tag",
        "transfer",
        "url",
        "user",
        "worktree",
    }
)
"""The sections of a git configuration kept in the copy commands see. Left out among others:
``credential`` (helpers), ``include``/``includeIf`` (files elsewhere), ``sendemail``,
``github``, ``hub``, ``remote``."""

_SECRET_NAME = re.compile(r"token|passw|secret|auth|header|cookie|credential|askpass", re.I)
"""Names of settings that hold or fetch a secret (``http.extraHeader``, ``core.askPass``)."""

_TOKEN = re.compile(r"authorization|bearer\s|\b(?:gh[pousr]_|github_pat_|glpat-|xox[abprs]-)", re.I)
"""Text that carries a secret: an authorization header, a token of a well-known kind."""

_URL_USER = re.compile(r"[a-z][a-z0-9+.-]*://([^/\s@]*)@", re.I)
"""The user part of a URL (``https://user:password@host``, ``https://TOKEN@host``)."""


def _carries_secret(text: str) -> bool:
    """Whether a value or subsection (``url."https://user:token@host/".insteadOf``) carries a
    secret: a URL with a password or with a user part that is no plain account name (``git@``
    is one), an authorization header or a well-known token."""
    for match in _URL_USER.finditer(text):
        user = match.group(1)
        if ":" in user or len(user) > 20 or not re.fullmatch(r"[A-Za-z][\w.-]*", user):
            return True
    return bool(_TOKEN.search(text))


_git_cache: dict[tuple[str, int, int, int, int], bytes | None] = {}
_git_lock = threading.Lock()


def _escape(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return text.replace("\n", "\\n").replace("\t", "\\t").replace("\b", "\\b")


def _kept(key: str, value: str | None) -> bool:
    section, _, rest = key.partition(".")
    if section not in _GIT_SECTIONS or _carries_secret(rest):
        return False
    if _SECRET_NAME.search(rest.rpartition(".")[2]):
        return False
    return value is None or not _carries_secret(value)


def _format_git_config(entries: Iterable[tuple[str, str | None]]) -> str:
    lines: list[str] = []
    current: tuple[str, str] | None = None
    for key, value in entries:
        section, _, rest = key.partition(".")
        subsection, _, name = rest.rpartition(".")
        if (section, subsection) != current:
            current = (section, subsection)
            if subsection:
                sub = subsection.replace("\\", "\\\\").replace('"', '\\"')
                lines.append(f'[{section} "{sub}"]')
            else:
                lines.append(f"[{section}]")
        lines.append(f"\t{name}" if value is None else f'\t{name} = "{_escape(value)}"')
    return "".join(line + "\n" for line in lines)


def sanitized_git_config(path: str) -> bytes | None:
    """The git configuration file ``path`` as commands see it: only the sections ordinary work
    needs (``user``, ``core``, ``init``, ``alias``, ``color``, ``pull``, ``push``...) and in them
    nothing that holds or fetches a secret (no credential helper, no ``http.extraHeader``, no URL
    carrying a user name or password, no setting named after a token or a password). ``None``
    when there is no such file, git cannot read it, or git is not installed (then commands see
    no git configuration of the user). Cached while the file is unchanged."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not os.path.isfile(path):
        return None
    key = (os.path.realpath(path), info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
    with _git_lock:
        if key in _git_cache:
            return _git_cache[key]
    text = _read_git_config(path)
    with _git_lock:
        if len(_git_cache) > 64:
            _git_cache.clear()
        _git_cache[key] = text
    return text


def _read_git_config(path: str) -> bytes | None:
    import subprocess  # here: `hermes --help` loads the sandbox package

    git = shutil.which("git")
    if git is None:
        return None
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    argv = [git, "config", "--file", path, "--no-includes", "--list", "--null"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    entries: list[tuple[str, str | None]] = []
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not item:
            continue
        name, newline, value = item.partition("\n")
        entry = (name, value if newline else None)
        if _kept(*entry):
            entries.append(entry)
    return _format_git_config(entries).encode("utf-8", "surrogateescape")
