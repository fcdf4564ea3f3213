"""The messages between a caller and the resident process, over a Unix stream socket.

Each message is a :mod:`marshal`-encoded value behind its length (4 bytes, big-endian). The
caller sends one request, with its standard input, output and error and its working folder
as file descriptors beside it (``SCM_RIGHTS``); the resident process answers
``("pid", n)`` once a child runs the call, or ``("refused", reason)``, then
``("status", wait_status)`` when the child has ended.
"""

from __future__ import annotations

import _socket
import marshal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _socket import socket
    from typing import Any

MAX_MESSAGE = 1 << 22
"""The largest message either side accepts (4 MiB: an environment, argv and a few figures)."""

MAX_FDS = 4
"""Standard input, output and error, and the working folder."""

_INT = 4
"""Bytes of a file descriptor in an ``SCM_RIGHTS`` message (a C ``int``)."""


class WireError(Exception):
    """A message was malformed, too large, or the other side went away."""


def _frame(value: Any) -> bytes:
    try:
        body = marshal.dumps(value)
    except ValueError as exc:  # a value marshal cannot write
        raise WireError(str(exc)) from None
    return len(body).to_bytes(4, "big") + body


def send(sock: socket, value: Any, fds: list[int] | None = None) -> None:
    """Send ``value`` (and ``fds`` beside its first byte)."""
    data = _frame(value)
    if fds:
        packed = b"".join(fd.to_bytes(_INT, sys.byteorder, signed=True) for fd in fds)
        rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, packed)]
        sent = sock.sendmsg([data], rights)
        data = data[sent:]
    if data:
        sock.sendall(data)


def _read_exactly(sock: socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 16))
        if not chunk:
            raise WireError("the other side went away")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _decode(head: bytes, sock: socket) -> Any:
    size = int.from_bytes(head[:4], "big")
    if size > MAX_MESSAGE:
        raise WireError("message too large")
    body = head[4:]
    if len(body) < size:
        body += _read_exactly(sock, size - len(body))
    elif len(body) > size:
        raise WireError("unexpected data after a message")
    try:
        return marshal.loads(body)
    except (EOFError, ValueError, TypeError) as exc:
        raise WireError(f"malformed message: {exc}") from None


def receive(sock: socket) -> Any:
    """The next message (no file descriptors expected)."""
    return _decode(_read_exactly(sock, 4), sock)


def receive_with_fds(sock: socket) -> tuple[Any, list[int]]:
    """The next message and the file descriptors sent beside it (closed again when the message
    is malformed)."""
    head, ancillary, flags, _ = sock.recvmsg(4, _socket.CMSG_SPACE(MAX_FDS * _INT))
    fds = []
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            whole = len(data) - len(data) % _INT
            fds += [
                int.from_bytes(data[i : i + _INT], sys.byteorder, signed=True)
                for i in range(0, whole, _INT)
            ]
    try:
        if flags & _socket.MSG_CTRUNC:
            raise WireError("too many file descriptors")
        if len(head) < 4:
            head += _read_exactly(sock, 4 - len(head))
        return _decode(head, sock), fds
    except BaseException:
        for fd in fds:
            _close(fd)
        raise


def peer_credentials(sock: socket) -> tuple[int, int, int]:
    """The pid, uid and gid of the process at the other end of ``sock`` (``SO_PEERCRED``)."""
    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return (
        int.from_bytes(raw[0:4], sys.byteorder, signed=True),
        int.from_bytes(raw[4:8], sys.byteorder, signed=True),
        int.from_bytes(raw[8:12], sys.byteorder, signed=True),
    )


def _close(fd: int) -> None:
    import os

    try:
        os.close(fd)
    except OSError:
        pass
