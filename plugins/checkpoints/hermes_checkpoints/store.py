"""The shadow git store: one bare repository per person, outside every workspace.

``<data home>/checkpoints/store.git`` holds the checkpoints of every workspace that person's
agents changed. Objects (file contents, folders) are shared between workspaces; each workspace
has refs of its own (``refs/hermes/<key>/...``, the key made from the workspace's real path), a
private index (git's cache of what it saw, so that an unchanged workspace costs a ``stat`` per
file) and an exclude file, under ``workspaces/<key>/``.

git runs with ``GIT_DIR``, ``GIT_WORK_TREE`` and ``GIT_INDEX_FILE`` set, without the user's or
the system's git configuration and with the workspace's ``.gitattributes`` overruled, so that no
filter, line-ending conversion or hook of the workspace applies: what is stored is the bytes on
disk. The workspace's own ``.git`` is never read nor written (git skips every ``.git``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hermes_hookspecs import HermesError

GIT_MINIMUM = (2, 32)
"""The oldest git that works: ``GIT_CONFIG_GLOBAL`` (2.32) keeps the user's configuration out."""

STORE_FOLDER = ("checkpoints", "store.git")
"""Where the store lies in a data home."""

LOCK_TIMEOUT = 120.0
"""Seconds a snapshot or a restore waits for another one on the same store."""

GIT_TIMEOUT = 600.0
"""Seconds one git command may take (the first snapshot of a big workspace hashes it all)."""

GC_LOOSE = 1000
"""Loose objects past which ``git gc --auto`` packs them (``gc.auto``)."""

GC_PACKS = 20
"""Packs past which ``git gc --auto`` joins them into one (``gc.autoPackLimit``)."""

_CONFIG = """
[core]
\tautocrlf = false
\tsafecrlf = false
\tsymlinks = true
\tfilemode = true
\tignorecase = false
\tprecomposeunicode = false
\tfsmonitor = false
\tuntrackedCache = false
\tlogAllRefUpdates = false
\tquotePath = false
\tcompression = 1
[index]
\tversion = 4
[pack]
\twindow = 0
[gc]
\tauto = 1000
\tautoPackLimit = 20
\tautoDetach = false
\tpruneExpire = now
\treflogExpire = now
\treflogExpireUnreachable = now
[hermes]
\tstore = 1
"""
"""Appended to the store's ``config`` when it is made. ``gc.pruneExpire=now`` is safe because
every git command of the store runs under the store's lock: no other snapshot can be writing
objects no ref names yet. ``pack.window=0``: packing looks for no deltas, which would cost
seconds per hundred megabytes (10 s for the first pack of a 200 MB workspace) on the call that
triggers it; each changed file is then stored compressed, whole."""

_CONFIG = _CONFIG.format(GC_LOOSE=GC_LOOSE, GC_PACKS=GC_PACKS)

_ATTRIBUTES = "* -text -eol -crlf -filter -ident -working-tree-encoding\n"
"""``info/attributes`` of the store, which takes precedence over the workspace's
``.gitattributes``: no line-ending conversion, no filter (LFS, ...), no ``$Id$`` expansion."""


class CheckpointError(HermesError):
    """A checkpoint could not be taken, read or restored; the message is one line."""


_git_checked: dict[str, tuple[int, ...]] = {}
_thread_locks: dict[str, threading.RLock] = {}
_held: dict[tuple[str, int], int] = {}
_registry_lock = threading.Lock()


def git_program() -> str:
    """The path of the ``git`` program, checked once per process to be recent enough.

    :raises CheckpointError: git is missing or older than 2.32.
    """
    found = shutil.which("git")
    if found is None:
        raise CheckpointError(
            "git is not installed: install git (2.32 or later), or set "
            "checkpoints.enabled: false to go on without checkpoints"
        )
    if found not in _git_checked:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30)
        match = re.search(r"(\d+)\.(\d+)", done.stdout)
        version = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
        if version < GIT_MINIMUM:
            raise CheckpointError(
                f"git {'.'.join(map(str, version))} is too old for checkpoints (2.32 or later "
                "is needed): update git, or set checkpoints.enabled: false"
            )
        _git_checked[found] = version
    return found


def workspace_key(root: Path) -> str:
    """The key of a workspace in the store: a hash of its real path (as bytes)."""
    return hashlib.sha256(os.fsencode(str(root))).hexdigest()[:20]


class Store:
    """One person's checkpoint store (a bare git repository) and the git commands run on it.

    :param path: the ``store.git`` folder (made on first use, private to its owner).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def of(cls, data_home: Path) -> Store:
        """The store of a data home (a person's folder, or the hermes home for its owner)."""
        return cls(data_home.joinpath(*STORE_FOLDER))

    def exists(self) -> bool:
        """Whether the store was ever made."""
        return (self.path / "HEAD").is_file()

    # --- making it ---------------------------------------------------------------------------

    def ensure(self) -> None:
        """Make the store if it is missing (under its lock): a bare repository with the
        configuration above, private to its owner.

        :raises CheckpointError: git is missing or fails, or the folder cannot be made.
        """
        if (self.path / "hermes-ready").is_file():
            return
        try:
            self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise CheckpointError(f"cannot make the checkpoint store {self.path}: {exc}") from None
        with self.lock():
            if (self.path / "hermes-ready").is_file():
                return
            self.git("init", "--bare", "--quiet", "--template=", str(self.path))
            with open(self.path / "config", "a", encoding="utf-8") as config:
                config.write(_CONFIG)
            (self.path / "info").mkdir(exist_ok=True)
            (self.path / "info" / "attributes").write_text(_ATTRIBUTES, encoding="utf-8")
            (self.path / "workspaces").mkdir(mode=0o700, exist_ok=True)
            (self.path / "hermes-ready").write_text("1\n", encoding="utf-8")

    # --- running git -------------------------------------------------------------------------

    def environ(self, workspace: Path | None = None, index: Path | None = None) -> dict[str, str]:
        """The environment git runs with: ours alone (no ``GIT_*`` variable of the caller, no
        user or system configuration, the C locale)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(
            GIT_DIR=str(self.path),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_ATTR_NOSYSTEM="1",
            GIT_TERMINAL_PROMPT="0",
            GIT_NO_REPLACE_OBJECTS="1",
            GIT_AUTHOR_NAME="hermes",
            GIT_AUTHOR_EMAIL="hermes@localhost",
            GIT_COMMITTER_NAME="hermes",
            GIT_COMMITTER_EMAIL="hermes@localhost",
            LC_ALL="C",
        )
        env.pop("LANGUAGE", None)
        if workspace is not None:
            env["GIT_WORK_TREE"] = str(workspace)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        return env

    def git(
        self,
        *args: str,
        workspace: Path | None = None,
        index: Path | None = None,
        stdin: bytes | None = None,
        ok: tuple[int, ...] = (0,),
    ) -> bytes:
        """Run ``git ARGS`` on the store (in ``workspace`` with its ``index`` when given) and
        return its output.

        :raises CheckpointError: git exits with a code not in ``ok``; the message names the
            command and git's first error line.
        """
        command = [git_program(), "-c", "safe.directory=*", *args]
        try:
            done = subprocess.run(
                command,
                input=stdin,
                capture_output=True,
                env=self.environ(workspace, index),
                cwd=str(workspace or self.path.parent),
                timeout=GIT_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CheckpointError(f"git {args[0]} could not run: {exc}") from None
        if done.returncode not in ok:
            lines = [
                line.strip()
                for line in done.stderr.decode("utf-8", "replace").splitlines()
                if line.strip()
            ]
            detail = next((line for line in lines if line.startswith("fatal")), "")
            detail = detail or (lines[0] if lines else f"exit code {done.returncode}")
            raise CheckpointError(f"git {args[0]} failed in the checkpoint store: {detail}")
        return done.stdout

    def popen(
        self,
        *args: str,
        workspace: Path | None = None,
        index: Path | None = None,
        with_input: bool = True,
    ) -> subprocess.Popen[bytes]:
        """Start ``git ARGS`` on the store (in ``workspace`` with its ``index`` when given) with
        pipes to its input and output, for ``cat-file --batch`` and for commands run side by
        side; :meth:`finish` collects one."""
        return subprocess.Popen(
            [git_program(), "-c", "safe.directory=*", *args],
            stdin=subprocess.PIPE if with_input else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.environ(workspace, index),
            cwd=str(workspace or self.path.parent),
        )

    @staticmethod
    def finish(process: subprocess.Popen[bytes], name: str) -> bytes:
        """The output of a git command :meth:`popen` started (its input closed).

        :raises CheckpointError: it failed.
        """
        try:
            out, err = process.communicate(timeout=GIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise CheckpointError(f"git {name} took over {GIT_TIMEOUT:g} seconds") from None
        if process.returncode != 0:
            lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
            detail = lines[0] if lines else f"exit code {process.returncode}"
            raise CheckpointError(f"git {name} failed in the checkpoint store: {detail}")
        return out

    # --- the lock ----------------------------------------------------------------------------

    @contextmanager
    def lock(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        """Hold the store's lock: snapshots, restores and pruning of one store never overlap,
        in this process or another. Re-entrant within a thread.

        :raises CheckpointError: the lock stayed taken for ``timeout`` seconds.
        """
        try:
            import fcntl
        except ImportError:  # not a POSIX system
            raise CheckpointError(
                "checkpoints need a POSIX system (file locks): set checkpoints.enabled: false"
            ) from None

        name = str(self.path)
        with _registry_lock:
            thread_lock = _thread_locks.setdefault(name, threading.RLock())
        held_key = (name, threading.get_ident())
        with thread_lock:
            if _held.get(held_key):
                _held[held_key] += 1
                try:
                    yield
                finally:
                    _held[held_key] -= 1
                return
            fd = os.open(self.path / "hermes.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                deadline = time.monotonic() + timeout
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise CheckpointError(
                                f"the checkpoint store {self.path} stayed locked for "
                                f"{timeout:g} seconds (another snapshot or restore)"
                            ) from None
                        time.sleep(0.02)
                _held[held_key] = 1
                try:
                    yield
                finally:
                    _held.pop(held_key, None)
            finally:
                os.close(fd)

    # --- its size ----------------------------------------------------------------------------

    def footprint(self) -> int:
        """What the store takes on disk, in bytes (the sizes of its files). Cheap enough to
        measure after every checkpoint: ``git gc --auto`` keeps the loose objects under
        ``gc.auto`` and the packs under ``gc.autoPackLimit``."""
        total = 0
        for folder, _dirs, files in os.walk(self.path):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    pass
        return total

    def gc(self, *, prune_all: bool = False) -> None:
        """Pack loose objects and drop those no checkpoint needs: ``git gc --auto`` (which does
        nothing until there are ``gc.auto`` loose objects), or a full ``git gc`` with
        ``prune_all``. Runs in the foreground, under the lock."""
        with self.lock():
            if prune_all:
                self.git("gc", "--quiet", "--prune=now")
            elif self.gc_due():
                self.git("gc", "--auto", "--quiet")
            else:
                return
            # a tree a snapshot wrote for a diff or a dry run (no ref names it) may be gone
            for cached in self.path.glob("workspaces/*/tree"):
                cached.unlink(missing_ok=True)

    def gc_due(self) -> bool:
        """Whether ``git gc --auto`` would find work, estimated as git does it (the loose
        objects of one of the 256 object folders, the packs) without starting git."""
        objects = self.path / "objects"
        try:
            loose = len(os.listdir(objects / "17"))
        except FileNotFoundError:
            loose = 0
        try:
            packs = sum(1 for n in os.listdir(objects / "pack") if n.endswith(".pack"))
        except FileNotFoundError:
            packs = 0
        return loose * 256 > GC_LOOSE or packs > GC_PACKS
