"""Writing and removing files inside a workspace without ever following a symbolic link.

Every operation walks from the workspace's folder one name at a time with ``O_NOFOLLOW`` and
works relative to the folder it reached (``dir_fd``), so a link on the way (``src -> /etc``)
stops it instead of leading it out of the workspace, even one made a moment before. Files are
written to a temporary name and renamed over the old one: a link in place of the file is
replaced, not written through.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat


class Blocked(Exception):
    """The path cannot be changed safely; the message says why (a short phrase)."""


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class SafeTree:
    """The files of one workspace, changed without following links.

    :param root: the workspace's folder (bytes).
    """

    def __init__(self, root: bytes) -> None:
        self.root_fd = os.open(root, _DIR_FLAGS)

    def close(self) -> None:
        """Release the workspace's folder."""
        os.close(self.root_fd)

    def __enter__(self) -> SafeTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _parent(self, path: bytes, create: bool) -> tuple[int, bytes] | None:
        """An open descriptor of ``path``'s folder and its last name; ``None`` when a folder
        on the way is missing and ``create`` is false.

        :raises Blocked: a folder on the way is a link or a file.
        """
        *folders, name = path.split(b"/")
        fd = os.dup(self.root_fd)
        try:
            for folder in folders:
                try:
                    following = os.open(folder, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        os.close(fd)
                        return None
                    os.mkdir(folder, 0o777, dir_fd=fd)
                    following = os.open(folder, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    link = stat.S_ISLNK(os.stat(folder, dir_fd=fd, follow_symlinks=False).st_mode)
                    what = "a symbolic link" if link else "a file now"
                    raise Blocked(f"a folder on its path is {what}") from None
                os.close(fd)
                fd = following
        except BaseException:
            os.close(fd)
            raise
        return fd, name

    def kind(self, path: bytes) -> str | None:
        """``file``, ``link``, ``folder`` or ``other`` for what is at ``path`` now; ``None`` when
        nothing is (or a folder on the way is missing).

        :raises Blocked: a folder on the way is a link or a file.
        """
        found = self._parent(path, create=False)
        if found is None:
            return None
        fd, name = found
        try:
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return None
        finally:
            os.close(fd)
        if stat.S_ISLNK(mode):
            return "link"
        if stat.S_ISDIR(mode):
            return "folder"
        return "file" if stat.S_ISREG(mode) else "other"

    def size(self, path: bytes) -> int:
        """The size of the file at ``path`` (0 when there is none)."""
        found = self._parent(path, create=False)
        if found is None:
            return 0
        fd, name = found
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False).st_size
        except FileNotFoundError:
            return 0
        finally:
            os.close(fd)

    def _replace(self, fd: int, temporary: bytes, name: bytes) -> None:
        try:
            os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError as exc:
            os.unlink(temporary, dir_fd=fd)
            if exc.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
                raise Blocked("a folder is there now") from None
            raise

    @staticmethod
    def _temporary(name: bytes) -> bytes:
        return b".hermes-restore-" + secrets.token_hex(6).encode("ascii") + b"-" + name[:80]

    def write(self, path: bytes, data: bytes, executable: bool) -> None:
        """Put ``data`` at ``path`` (making the folders on the way), replacing what is there.

        :raises Blocked: a folder on the way is a link or a file, or a folder is at ``path``.
        """
        found = self._parent(path, create=True)
        assert found is not None
        fd, name = found
        try:
            temporary = self._temporary(name)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            out = os.open(temporary, flags, 0o777 if executable else 0o666, dir_fd=fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
            finally:
                os.close(out)
            self._replace(fd, temporary, name)
        finally:
            os.close(fd)

    def symlink(self, path: bytes, target: bytes) -> None:
        """Put a symbolic link to ``target`` at ``path`` (the link is made, never followed).

        :raises Blocked: as :meth:`write`.
        """
        found = self._parent(path, create=True)
        assert found is not None
        fd, name = found
        try:
            temporary = self._temporary(name)
            os.symlink(target, temporary, dir_fd=fd)
            self._replace(fd, temporary, name)
        finally:
            os.close(fd)

    def remove(self, path: bytes) -> bool:
        """Remove the file or link at ``path``; ``False`` when there was none.

        :raises Blocked: a folder on the way is a link or a file, or ``path`` is a folder.
        """
        found = self._parent(path, create=False)
        if found is None:
            return False
        fd, name = found
        try:
            os.unlink(name, dir_fd=fd)
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            if exc.errno in (errno.EISDIR, errno.EPERM):
                raise Blocked("a folder is there now") from None
            raise
        finally:
            os.close(fd)

    def remove_empty_folder(self, path: bytes) -> bool:
        """Remove the folder at ``path`` when it is empty; ``False`` when it is not (or is no
        folder, or is gone)."""
        try:
            found = self._parent(path, create=False)
        except Blocked:
            return False
        if found is None:
            return False
        fd, name = found
        try:
            os.rmdir(name, dir_fd=fd)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
