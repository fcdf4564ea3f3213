"""Serving an aiohttp application on a host and port, for the adapters that listen; in a worker
process, on the listening socket the supervisor opened for that address (see
:mod:`hermes_gateway.workers`), taking one connection at a time from it.

Every worker is woken when connections wait on the shared socket, and asyncio's own server
then accepts all of them at once: a burst of connections went to whichever worker woke first,
and with keep-alive its requests stayed there (one worker served most of them while the other
idled). So each worker takes one connection at a time, and only while it holds no more open
connections than the least loaded other worker (their counts are in memory the supervisor
shares with its workers), unless that one has not taken the waiting connection within
``MAX_DEFER`` seconds (it is busy, or not yet started). The connections no worker has taken
yet stay in the socket's queue, for the others, when a worker dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import mmap
import socket
import struct
import time
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import HermesError

_shared: dict[tuple[str, int], socket.socket] = {}
_RETRY_ACCEPT = 1.0
"""Seconds a worker out of file descriptors waits before it accepts connections again."""
MAX_DEFER = 0.01
"""Seconds a worker leaves a waiting connection to a less loaded one before it takes it."""
_DEFER_STEP = 0.001
_GONE = 2**62
"""The open connections recorded for a worker that takes none (a dead one)."""


class Loads:
    """The open connections of each of ``count`` workers (numbered from 1), in memory that
    processes forked after it was made share."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._memory = mmap.mmap(-1, 8 * count)
        for number in range(1, count + 1):
            self.set(number, _GONE)

    def set(self, number: int, connections: int) -> None:
        """Record worker ``number``'s open connections."""
        struct.pack_into("q", self._memory, 8 * (number - 1), connections)

    def gone(self, number: int) -> None:
        """Record that worker ``number`` takes no connection (it died)."""
        self.set(number, _GONE)

    def fewest_besides(self, number: int) -> int:
        """The fewest open connections of a worker other than ``number``."""
        counts = struct.unpack_from(f"{self.count}q", self._memory)
        others = [c for n, c in enumerate(counts, start=1) if n != number]
        return min(others, default=_GONE)


_balance: tuple[Loads, int] | None = None


def share(
    sockets: Mapping[tuple[str, int], socket.socket], loads: Loads | None = None, number: int = 1
) -> None:
    """Listen on these open sockets instead of binding their ``(host, port)`` again (in a
    worker process: the supervisor's sockets, shared by every worker); ``loads`` holds the
    open connections of this worker, ``number``, and of the others."""
    global _balance
    _shared.clear()
    _shared.update(sockets)
    _balance = (loads, number) if loads is not None else None


def open_listener(host: str, port: int, what: str) -> socket.socket:
    """A socket bound to ``host``:``port`` (a free port for 0) and listening.

    :raises HermesError: one line naming ``what`` when the address cannot be listened on.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise HermesError(f"{what} cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise HermesError(f"{what} cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


async def listen(app: Any, host: str, port: int, what: str) -> tuple[Any, int]:
    """Serve ``app`` (an ``aiohttp.web.Application``) on ``host``:``port``; return its
    ``AppRunner`` (``cleanup()`` stops it) and the bound port, a free one when ``port`` is 0.

    :raises HermesError: one line naming ``what`` when the address cannot be listened on.
    """
    from aiohttp import web

    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    shared = _shared.get((host, port))
    site: web.BaseSite
    if shared is not None:
        site = _one_at_a_time_site(runner, shared, _balance)
    else:
        site = web.TCPSite(runner, host, port, reuse_address=True)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise HermesError(f"{what} cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    if shared is not None:
        return runner, int(shared.getsockname()[1])
    server = site._server  # the bound socket: the only way aiohttp tells a port it chose
    sockets = getattr(server, "sockets", None)  # asyncio's Server, or uvloop's
    if sockets:
        port = int(sockets[0].getsockname()[1])
    return runner, port


class _Pacer:
    """When a worker leaves a waiting connection to a less loaded one (see the module)."""

    def __init__(self, balance: tuple[Loads, int] | None) -> None:
        self.balance = balance
        self.deferred_since: float | None = None

    def started(self) -> None:
        """The worker takes connections from now on."""
        if self.balance is not None:
            self.balance[0].set(self.balance[1], 0)

    def holding(self, connections: int) -> None:
        """Record the worker's open connections."""
        if self.balance is not None:
            self.balance[0].set(self.balance[1], connections)

    def defer(self, connections: int) -> bool:
        """Whether to leave the waiting connection to another worker for now, holding
        ``connections``."""
        if self.balance is None:
            return False
        loads, number = self.balance
        loads.set(number, connections)
        now = time.monotonic()
        if connections <= loads.fewest_besides(number):
            self.deferred_since = None
            return False
        if self.deferred_since is None:
            self.deferred_since = now
        elif now - self.deferred_since >= MAX_DEFER:
            self.deferred_since = None
            return False
        return True


def _one_at_a_time_site(runner: Any, sock: socket.socket, balance: tuple[Loads, int] | None) -> Any:
    """An aiohttp site serving ``runner`` on the listening socket ``sock`` it shares with
    other processes, accepting one connection per turn of the event loop, and leaving it to
    a less loaded worker for a moment when ``balance`` knows one."""
    from aiohttp import web

    pacer = _Pacer(balance)

    class OneAtATimeSite(web.BaseSite):
        """Accepts from a shared listening socket at the pace this process serves."""

        @property
        def name(self) -> str:
            """The URL served."""
            host, port = sock.getsockname()[:2]
            return f"http://{host}:{port}"

        async def start(self) -> None:
            """Start taking connections."""
            await super().start()
            pacer.started()
            self._watch(asyncio.get_running_loop())

        def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
            if sock.fileno() >= 0:
                loop.add_reader(sock.fileno(), self._accept, loop)

        def _pause(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
            loop.remove_reader(sock.fileno())
            loop.call_later(seconds, self._watch, loop)

        def _accept(self, loop: asyncio.AbstractEventLoop) -> None:
            if pacer.defer(len(runner.server.connections)):
                self._pause(loop, _DEFER_STEP)
                return
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return  # another worker took it
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._pause(loop, _RETRY_ACCEPT)  # else it is ready again at once
                return
            conn.setblocking(False)
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pacer.holding(len(runner.server.connections) + 1)
            serving = asyncio.ensure_future(loop.connect_accepted_socket(runner.server, conn))
            serving.add_done_callback(_close_on_failure(conn))

        async def stop(self) -> None:
            """Stop taking connections (the socket stays open: it is the supervisor's)."""
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(sock.fileno())
            await super().stop()

    return OneAtATimeSite(runner)


def _close_on_failure(conn: socket.socket) -> Any:
    def done(serving: asyncio.Future[Any]) -> None:
        if serving.cancelled() or serving.exception() is not None:
            conn.close()

    return done
