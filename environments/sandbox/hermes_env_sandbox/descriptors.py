"""File descriptors the sandbox hands to bwrap: data to show as a file, and paths opened and
checked by hermes, so that swapping a path for a link after the check changes nothing."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from .home import HomeEntry, entry_problem
from .paths import inside

__all__ = ["data_fd", "existing_depth", "open_checked", "open_inside"]


def data_fd(data: bytes) -> int:
    """A descriptor to read ``data`` from, from its start (for bwrap's ``--ro-bind-data``)."""
    try:
        fd = os.memfd_create("hermes-sandbox-data", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        import tempfile

        with tempfile.TemporaryFile() as handle:
            fd = os.dup(handle.fileno())
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_where(path: str, keep: Callable[[str], bool]) -> tuple[int, str] | None:
    """An ``O_PATH`` descriptor of what ``path`` leads to, with that place, when ``keep`` says
    yes to the place (read from the open descriptor); ``None`` when it is missing or refused."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        os.close(fd)
        return None
    if not keep(target):
        os.close(fd)
        return None
    return fd, target


def open_checked(entry: HomeEntry, home: str, hidden: Sequence[str]) -> int | None:
    """An ``O_PATH`` descriptor of what the allowed ``entry`` of the home folder leads to, when
    that is still where it led when the sandbox was made and
    :func:`hermes_env_sandbox.home.entry_problem` finds nothing wrong with it; ``None`` when it
    is missing or may not be shown. The check is made on the open descriptor, so swapping the
    path for a link afterwards changes nothing."""

    def keep(target: str) -> bool:
        return target == entry.target and not entry_problem(entry.path, target, home, hidden)

    opened = _open_where(entry.path, keep)
    return opened[0] if opened else None


def existing_depth(path: str) -> int:
    """How many components deep the longest existing folder that ``path`` starts with is."""
    while path != "/" and not os.path.lexists(path):
        path = os.path.dirname(path)
    return path.count("/")


def open_inside(path: str, root: str) -> tuple[int, str] | None:
    """An ``O_PATH`` descriptor of what ``path`` leads to, with that place, when it is strictly
    inside ``root``; ``None`` when it is missing or leads elsewhere. The check is made on the
    open descriptor, so swapping ``path`` for a link afterwards changes nothing."""
    return _open_where(path, lambda target: target != root and inside(target, root))
