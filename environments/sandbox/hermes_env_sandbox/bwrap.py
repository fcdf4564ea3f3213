"""The sandbox built with bubblewrap: what a command sees, may write and may reach.

A :class:`Sandbox` belongs to one task. :meth:`Sandbox.command` turns a command's argv into a
``bwrap`` argv (and the file descriptors it must inherit); the caller starts that argv as it
would have started the command. The mounts, in the order bwrap makes them:

1. the whole file system read-only, a fresh ``/dev``, a fresh ``/proc`` (own PID namespace),
   an empty ``/run`` (the Docker, containerd and podman sockets, the user's agent sockets), and
   no capabilities, for root too (no mount can be undone from inside); the task's ``/tmp``;
2. the home folder: an empty tmpfs (read-only once the rest is in place), into which the
   toolchain folders of :mod:`hermes_env_sandbox.home` and ``terminal.sandbox.home_allow`` are
   bound read-only (writable where marked), each from a file descriptor hermes opened and
   checked (no credential folder in it, not leading to one, still leading where it led when
   the sandbox was made), and the filtered copies of the user's git configuration; and hidden
   paths that contain a writable folder (a per-user workspace inside ``$HERMES_HOME``): outer
   folders first;
3. the workspace, writable (``workspace`` profile only; in the ``read-only`` profile a
   workspace inside the hidden home folder is bound read-only);
4. inside the workspace, read-only again: ``.git/hooks``, ``.git/config`` and, when the home
   folder is inside it, the shell's start-up files (what a command would plant to run later);
   ``.git`` itself a mount point, so that it cannot be moved aside and replaced;
   each bound from a file descriptor opened and checked by hermes, never through a path a
   command could swap for a symlink in between;
5. every other hidden path: an empty read-only folder, or an empty file (those inside the hidden
   home folder only where the workspace holds them: elsewhere they are absent already);
6. the shell preamble of the environment, read-only.

Each hidden path is hidden where it really is too (``realpath``), so a symlink in the
workspace that leads to a hidden folder shows the empty folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from hermes_hookspecs import PathSight

from .availability import SandboxUnavailable, find_bwrap, unavailable_reason
from .descriptors import data_fd, existing_depth, open_checked, open_inside
from .home import (
    GIT_CONFIG_FILES,
    HIDDEN_IN_HOME,
    HomeEntry,
    entry_problem,
    expand_in_home,
    home_entries,
    sanitized_git_config,
    workspace_problem,
)
from .paths import inside, resolved
from .settings import SandboxSettings

__all__ = [
    "HIDDEN_IN_HOME",
    "PROTECTED_IN_HOME",
    "PROTECTED_IN_WORKSPACE",
    "RUN_DIR",
    "Sandbox",
    "SandboxUnavailable",
    "check_start",
    "find_bwrap",
    "unavailable_reason",
]


HIDDEN_SYSTEM = ("/var/run/docker.sock", "/var/run/containerd", "/var/run/podman")
"""Sockets outside ``/run`` (where ``/var/run`` is not a link to it)."""

PROTECTED_IN_WORKSPACE = (".git/hooks", ".git/config")
"""Inside the workspace, read-only: a command could plant code there that runs later."""

PROTECTED_IN_HOME = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".gitconfig",
    ".config/git",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".config/fish",
    ".local/bin",
    ".local/lib",
    ".local/share/applications",
    ".pam_environment",
    ".xprofile",
    ".xsessionrc",
)
"""Read-only when the home folder is inside a writable folder (a workspace of ``~``)."""

RUN_DIR = "/run/hermes"
"""Where the environment's read-only files (the shell preamble) appear in the sandbox."""


class _Hidden(NamedTuple):
    path: str
    is_dir: bool


def _named_home(home: str | None) -> str:
    return os.path.abspath(os.path.expanduser(home or os.environ.get("HOME") or "~"))


def _hidden_paths(settings: SandboxSettings, home: str, hermes_home: str) -> list[str]:
    paths = [hermes_home]
    paths += [os.path.join(home, p) for p in HIDDEN_IN_HOME]
    paths += list(HIDDEN_SYSTEM)
    paths += [expand_in_home(p, home) for p in settings.hide]
    return list(dict.fromkeys(paths))


def _both_forms(paths: Iterable[str]) -> list[str]:
    """Each path as written and where it really is."""
    found: list[str] = []
    for path in paths:
        found += [path, resolved(path)]
    return list(dict.fromkeys(found))


def check_start(
    settings: SandboxSettings,
    *,
    workspace: str | None,
    hermes_home: str,
    home: str | None = None,
) -> None:
    """Refuse (:class:`SandboxUnavailable`, one line naming the fix) the settings a sandbox
    over ``workspace`` cannot start with, without starting one: a workspace that is ``/`` or
    the home folder itself (not checked when ``workspace`` is ``None``), a
    ``terminal.sandbox.home_allow`` path that holds a credential folder, lies in one or is not
    in the home folder. Nothing for the ``off`` profile."""
    if not settings.enabled:
        return
    real_home = resolved(_named_home(home))
    problem = workspace_problem(resolved(workspace), real_home) if workspace else None
    if problem:
        raise SandboxUnavailable(problem, rule="sandbox-workspace")
    if settings.home_allow:
        hidden = _both_forms(_hidden_paths(settings, real_home, resolved(hermes_home)))
        _, problem = home_entries(
            settings, home=real_home, named_home=_named_home(home), hidden=hidden
        )
        if problem:
            raise SandboxUnavailable(problem, rule="sandbox-home-allow")


class Sandbox:
    """The sandbox of one task.

    :param settings: the profile and limits (not ``off``).
    :param workspace: the task's working folder (writable in the ``workspace`` profile).
    :param tmp: a folder of this task that commands see as ``/tmp``.
    :param hermes_home: hermes's own folder (configuration, keys, sessions): hidden.
    :param home: the user's home folder (default ``$HOME``).
    :param bwrap: the bwrap executable (default :func:`find_bwrap`).
    :param search_path: the ``PATH`` commands start with (default: this process's); its
        folders under this machine's ``/tmp`` stay visible to commands, read-only.
    """

    def __init__(
        self,
        settings: SandboxSettings,
        *,
        workspace: str,
        tmp: str,
        hermes_home: str,
        home: str | None = None,
        bwrap: str | None = None,
        search_path: str | None = None,
    ) -> None:
        if not settings.enabled:
            raise ValueError("the 'off' profile has no sandbox")
        check_start(settings, workspace=workspace, hermes_home=hermes_home, home=home)
        reason = unavailable_reason(bwrap)
        if reason:
            raise SandboxUnavailable(reason)
        import sys

        self.settings = settings
        self.bwrap = bwrap or find_bwrap() or "bwrap"
        self.workspace = resolved(workspace)
        self.tmp = resolved(tmp)
        named_home = _named_home(home)
        self.home = resolved(named_home)
        self.hermes_home = resolved(hermes_home)
        self.writable = writable_roots(settings, self.workspace)
        self.programs = _programs_under_tmp(self.writable, search_path)
        self.home_hidden = _hides_home(self.home, self.workspace)
        """Whether commands see an empty home folder but for the allowed paths: unless the home
        folder is missing, ``/``, under ``/tmp`` (the task's own ``/tmp`` replaces it) or in
        the workspace (then the credential folders and ``$HERMES_HOME`` are hidden in it)."""
        self.home_entries: tuple[HomeEntry, ...] = ()
        """The paths of the home folder commands see, when :attr:`home_hidden`."""
        if self.home_hidden:
            entries, _ = home_entries(
                settings,
                home=self.home,
                named_home=named_home,
                hidden=_both_forms(self.hidden_paths()),
                search_path=os.environ.get("PATH", "") if search_path is None else search_path,
                prefixes=(sys.prefix, sys.exec_prefix, sys.base_prefix),
            )
            # what lies in the workspace shows as part of it
            self.home_entries = tuple(e for e in entries if not inside(e.path, self.workspace))

    # --- what is hidden -------------------------------------------------------------------

    def hidden_paths(self) -> list[str]:
        """Every path hidden from commands (as configured; before links are followed)."""
        return _hidden_paths(self.settings, self.home, self.hermes_home)

    def _hidden(self) -> list[_Hidden]:
        found: dict[str, _Hidden] = {}
        for path in self.hidden_paths():
            # where it really is: every path leading there (a link, /var/run for /run) then
            # shows what is mounted on it
            real = resolved(path)
            if not os.path.lexists(real) or real in ("/", self.tmp):
                continue
            if inside(real, "/proc") or inside(real, "/run"):  # /run is empty already
                continue
            found[real] = _Hidden(real, os.path.isdir(real))
        return sorted(found.values(), key=lambda h: h.path)

    # --- the argv -------------------------------------------------------------------------

    def command(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        files: Mapping[str, str] | None = None,
        protect: bool = True,
    ) -> tuple[list[str], list[int]]:
        """The bwrap argv that runs ``argv`` in ``cwd`` inside the sandbox, and the file
        descriptors it must inherit (the caller closes them once the process started).
        ``files`` maps names to host files shown read-only as ``/run/hermes/NAME``.
        ``protect=False`` leaves out the read-only ``.git/hooks`` and start-up files inside the
        workspace (for a caller that cannot pass descriptors); then no descriptor is needed."""
        fds: list[int] = []
        try:
            args = self._mounts(fds, files or {}, protect)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        args += ["--chdir", cwd, "--", *argv]
        return args, fds

    def _mounts(self, fds: list[int], files: Mapping[str, str], protect: bool) -> list[str]:
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        # --as-pid-1: no reaper of bwrap's own inside the namespace. With one, bwrap's outer
        # process leaves as soon as the reaper reports the command's status, and the reaper,
        # orphaned, stays a zombie wherever nothing reaps orphans (an init that does not, a
        # container without one). The shell is the namespace's first process instead: it reaps
        # what it starts, and the namespace ends with it as before.
        args += ["--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts"]
        args += ["--unshare-cgroup-try"]
        # bwrap started by root keeps root's capabilities in the sandbox unless told: with them
        # a command could unmount what hides a folder, or remount / writable
        args += ["--cap-drop", "ALL"]
        if not self.settings.network:
            args.append("--unshare-net")
        args += ["--tmpfs", "/run"]
        if self.settings.network:
            args += self._resolver_mounts()
        args += ["--bind", self.tmp, "/tmp"]  # first: the rest may lie inside /tmp
        for folder in self.programs:  # programs installed under this machine's /tmp stay
            args += ["--ro-bind", folder, folder]
        every = self._hidden()
        hidden = [h for h in every if not inside(h.path, "/tmp")]
        around = [h for h in every if h.is_dir and any(inside(r, h.path) for r in self.writable)]
        home = self.home if self.home_hidden else None
        # empty folders over the home folder and over hidden folders holding the workspace,
        # outer ones first: each inner one is made inside the outer one
        layers = sorted({*(h.path for h in around), *([home] if home else [])}, key=_depth)
        for layer in layers:
            args += ["--tmpfs", layer]
            if layer == home:
                args += self._home_mounts(fds, protect)
        for root in self.writable:
            args += ["--bind", root, root]
        if home and not self.writable and inside(self.workspace, home):
            args += ["--ro-bind", self.workspace, self.workspace]  # read-only profile
        if protect:
            args += self._protections(fds)
        for item in hidden:
            if item in around:
                continue
            if home and inside(item.path, home) and not inside(item.path, self.workspace):
                continue  # absent already: only what is allowed shows in the home folder
            if item.is_dir:
                args += ["--tmpfs", item.path, "--remount-ro", item.path]
            else:
                args += ["--ro-bind", "/dev/null", item.path]
        for layer in layers:
            args += ["--remount-ro", layer]
        for name, source in files.items():
            args += ["--ro-bind", source, f"{RUN_DIR}/{name}"]
        return args

    def _home_mounts(self, fds: list[int], protect: bool) -> list[str]:
        """The allowed paths of the hidden home folder, and the filtered git configuration.

        Each path is bound from a descriptor hermes opened and checked (it still leads where it
        led when the sandbox was made, and that holds no hidden path and lies in none):
        swapping a path for a link afterwards changes nothing. A path that now fails the check
        is left out. It is bound where it is named and, when it leads elsewhere in the home
        folder, there too (links through it keep working). Without ``protect`` (no
        descriptors) paths are bound by name, but none that leads into a folder commands may
        write."""
        hidden = _both_forms(self.hidden_paths())
        writable = [self.workspace] + [e.path for e in self.home_entries if e.writable]
        args: list[str] = []
        for entry in self.home_entries:
            flag = "--bind" if entry.writable else "--ro-bind"
            if protect:
                opened = open_checked(entry, self.home, hidden)
                if opened is None:
                    continue
                fds.append(opened)
                args += [f"{flag}-fd", str(opened), entry.path]
                if self._twin(entry.path, entry.target):
                    twin = os.dup(opened)
                    fds.append(twin)
                    args += [f"{flag}-fd", str(twin), entry.target]
                continue
            target = resolved(entry.path)
            if target != entry.target or not os.path.exists(target):
                continue
            if entry_problem(entry.path, target, self.home, hidden):
                continue
            if any(inside(target, w) for w in writable if w != entry.path):
                continue  # a command could swap it for a link before bwrap binds it
            args += [flag, target, entry.path]
            if self._twin(entry.path, target):
                args += [flag, target, target]
        if protect:
            args += self._git_config_mounts(fds)
        return args

    def _twin(self, path: str, target: str) -> bool:
        """Whether an allowed ``path`` that leads to ``target`` is also bound there: when that
        is elsewhere in the hidden home folder (and not in the workspace, which shows itself)."""
        return target != path and inside(target, self.home) and not inside(target, self.workspace)

    def _git_config_mounts(self, fds: list[int]) -> list[str]:
        """``~/.gitconfig`` and ``~/.config/git/config`` as filtered copies (see
        :func:`hermes_env_sandbox.home.sanitized_git_config`), unless an allowed path or the
        workspace shows the file itself."""
        args: list[str] = []
        for name in GIT_CONFIG_FILES:
            path = os.path.join(self.home, name)
            if inside(path, self.workspace) or any(inside(path, e.path) for e in self.home_entries):
                continue
            data = sanitized_git_config(path)
            if data is None:
                continue
            fd = data_fd(data)
            fds.append(fd)
            args += ["--perms", "0644", "--ro-bind-data", str(fd), path]
        return args

    def _resolver_mounts(self) -> list[str]:
        """With the network on, keep name resolution working where ``/etc/resolv.conf``
        leads into ``/run`` (systemd-resolved)."""
        target = resolved("/etc/resolv.conf")
        if inside(target, "/run") and os.path.exists(target):
            folder = os.path.dirname(target)
            return ["--ro-bind", folder, folder]
        return []

    def _protections(self, fds: list[int]) -> list[str]:
        args: list[str] = []
        for root in self.writable:
            # .git a mount point of its own: it cannot be moved aside or deleted and replaced
            # by one whose hooks run when the user next runs git; what is inside stays writable
            opened = open_inside(os.path.join(root, ".git"), root)
            if opened is not None:
                fds.append(opened[0])
                args += ["--bind-fd", str(opened[0]), opened[1]]
            names = [os.path.join(root, p) for p in PROTECTED_IN_WORKSPACE]
            if inside(self.home, root):
                names += [os.path.join(self.home, p) for p in PROTECTED_IN_HOME]
            for name in names:
                opened = open_inside(name, root)
                if opened is None:
                    continue
                fd, target = opened
                fds.append(fd)
                args += ["--ro-bind-fd", str(fd), target]
        return args

    # --- paths as commands see them -------------------------------------------------------

    def host_path(self, path: str) -> str:
        """Where hermes's own file operations find the absolute ``path`` a command names.

        Under ``/tmp`` (outside the writable folders) a command sees the task's own ``/tmp``
        folder: a path that is there, or is new and leads deeper into that folder than into
        this machine's ``/tmp``, is in that folder; any other path (this machine's ``/tmp``,
        which commands do not see) is itself."""
        path = os.path.normpath(path)
        if any(inside(path, root) for root in self.writable) or not inside(path, "/tmp"):
            return path
        mapped = self.tmp + path[len("/tmp") :]
        if os.path.lexists(mapped):
            return mapped
        if existing_depth(mapped) - self.tmp.count("/") + 1 >= existing_depth(path):
            return mapped  # new, and more of it is in the task's /tmp than outside
        return path

    def path_sight(self, path: str) -> PathSight:
        """What commands see of the absolute host ``path`` (:func:`.view.path_sight`)."""
        from .view import path_sight

        return path_sight(self, path)

    # --- what commands get ----------------------------------------------------------------

    def describe(self) -> str:
        """One line: what a command may write and reach, and what it cannot see."""
        return describe(self.settings, self.workspace, self.home)


def writable_roots(settings: SandboxSettings, workspace: str) -> tuple[str, ...]:
    """The folders besides the task's ``/tmp`` that commands may write under ``settings``:
    the workspace (as it really is) in the ``workspace`` profile, unless it is ``/``."""
    real = resolved(workspace)
    return (real,) if settings.profile == "workspace" and real != "/" else ()


def describe(settings: SandboxSettings, workspace: str, home: str | None = None) -> str:
    """One line: what a command in the sandbox of ``settings`` over ``workspace`` may write
    and reach, and what it cannot see (without starting a sandbox). ``home``: the user's home
    folder (default ``$HOME``)."""
    writable = writable_roots(settings, workspace)
    if writable:
        write = f"writes only in {writable[0]} and /tmp (the task's own)"
    else:
        write = "writes only in /tmp (the task's own)"
    net = "the network is on" if settings.network else "no network"
    shown = ""
    if _hides_home(resolved(_named_home(home)), resolved(workspace)):
        shown = "the home folder hidden but for the workspace and toolchain folders; "
    return (
        f"sandbox '{settings.profile}': {write}; {net}; {shown}hermes's home and credential "
        "folders (~/.ssh, ~/.aws, ...) hidden"
    )


def _hides_home(home: str, workspace: str) -> bool:
    """Whether the sandbox hides the home folder ``home`` (as it really is) from commands over
    ``workspace``: unless it is ``/``, missing, under ``/tmp`` (which commands see replaced) or
    in the workspace."""
    if home == "/" or not os.path.isdir(home) or inside(home, "/tmp"):
        return False
    return not inside(home, workspace)


def _depth(path: str) -> tuple[int, str]:
    return path.count("/"), path


def _programs_under_tmp(writable: Iterable[str], search_path: str | None) -> tuple[str, ...]:
    """The folders of ``PATH`` and of this Python (a virtual environment) that lie under this
    machine's ``/tmp``, which commands see replaced by the task's own: shown read-only, so the
    programs hermes itself finds stay there for commands."""
    import sys

    if search_path is None:
        search_path = os.environ.get("PATH", "")
    folders = search_path.split(os.pathsep)
    folders += [sys.prefix, sys.exec_prefix, sys.base_prefix]
    found = []
    for folder in folders:
        real = resolved(folder) if folder else ""
        if not real.startswith("/tmp/") or not os.path.isdir(real):
            continue
        if any(inside(real, root) for root in writable):
            continue
        found.append(real)
    return tuple(dict.fromkeys(found))


ALLOWED_VARIABLES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "COLORTERM"}
)
"""Variables a sandboxed command inherits from hermes (with every ``LC_*``)."""


def allowed_environment(env: Mapping[str, str], passthrough: Iterable[str] = ()) -> dict[str, str]:
    """The part of ``env`` a sandboxed command starts with: :data:`ALLOWED_VARIABLES`, the
    locale variables and the names in ``passthrough`` (``terminal.env_passthrough``); nothing
    else, known secret or not. ``TMPDIR`` is ``/tmp`` (the task's own)."""
    allowed = ALLOWED_VARIABLES | frozenset(passthrough)
    kept = {k: v for k, v in env.items() if k in allowed or k.startswith("LC_")}
    kept["TMPDIR"] = "/tmp"
    return kept
