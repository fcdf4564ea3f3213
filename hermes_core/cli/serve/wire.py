"""The messages between a caller and the resident process, over a Unix stream socket.

Each message is a :mod:`marshal`-encoded value behind its length (4 bytes, big-endian). The
caller sends one request, with its standard input, output and error and its working folder
as file descriptors beside it (``SCM_RIGHTS``); the resident process answers
``("pid", n)`` once a child runs the call, or ``("refused", reason)``, then
``("status", wait_status)`` when the child has ended.
"""

from __future__ import annotations

import marshal
import socket
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_MESSAGE = 1 << 22
"""The largest message either side accepts (4 MiB: an environment, argv and a few figures)."""

MAX_FDS = 4
"""Standard input, output and error, and the working folder."""


class WireError(Exception):
    """A message was malformed, too large, or the other side went away."""


def _frame(value: Any) -> bytes:
    try:
        body = marshal.dumps(value)
    except ValueError as exc:  # a value marshal cannot write
        raise WireError(str(exc)) from None
    return len(body).to_bytes(4, "big") + body


def send(sock: socket.socket, value: Any, fds: list[int] | None = None) -> None:
    """Send ``value`` (and ``fds`` beside its first byte)."""
    data = _frame(value)
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        data = data[sent:]
    if data:
        sock.sendall(data)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 16))
        if not chunk:
            raise WireError("the other side went away")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _decode(head: bytes, sock: socket.socket) -> Any:
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


def receive(sock: socket.socket) -> Any:
    """The next message (no file descriptors expected)."""
    return _decode(_read_exactly(sock, 4), sock)


def receive_with_fds(sock: socket.socket) -> tuple[Any, list[int]]:
    """The next message and the file descriptors sent beside it (closed again when the message
    is malformed)."""
    head, fds, flags, _ = socket.recv_fds(sock, 4, MAX_FDS)
    try:
        if flags & socket.MSG_CTRUNC:
            raise WireError("too many file descriptors")
        if len(head) < 4:
            head += _read_exactly(sock, 4 - len(head))
        return _decode(head, sock), fds
    except BaseException:
        for fd in fds:
            _close(fd)
        raise


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """The pid, uid and gid of the process at the other end of ``sock`` (``SO_PEERCRED``)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
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
