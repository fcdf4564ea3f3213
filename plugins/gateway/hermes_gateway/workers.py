"""Serving the gateway from several worker processes (``gateway.workers``): a supervisor opens
the listening socket of every platform once, forks the workers, which all accept on those
sockets and share the session store, and replaces a worker that dies.

Each worker is a whole gateway (its own event loop, turn threads and model clients): throughput
grows with the workers up to the machine's cores. What must hold across workers lives in the
session store and the files of ``$HERMES_HOME``: the sessions, one turn at a time per session
(the store's lock, see :mod:`.session_locks`), and which session each conversation is in
(``gateway/sessions.json``, see :mod:`.routes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hermes_hookspecs import HermesError

from . import listening
from .core import GatewayCore
from .serve import serve

RESTARTS_PER_MINUTE = 10
"""Worker deaths within a minute after which the supervisor stops rather than restart more."""


def listening_addresses(gateway: GatewayCore) -> dict[str, tuple[str, int]]:
    """The ``(host, port)`` each platform's adapter listens on.

    :raises HermesError: for a platform whose adapter does not listen on an address (one that
        polls or keeps a connection to its platform cannot be served by several workers).
    """
    addresses = {}
    for name, adapter in gateway.adapters.items():
        host, port = getattr(adapter, "host", None), getattr(adapter, "port", None)
        if not isinstance(host, str) or not isinstance(port, int):
            raise HermesError(
                f"gateway.workers: the platform {name} does not listen on an address, so "
                "only one worker can serve it (set gateway.workers: 1)"
            )
        addresses[name] = (host, port)
    return addresses


class Supervisor:
    """Runs ``count`` workers, each serving the gateway ``make_gateway()`` builds, on sockets
    opened once; a worker that dies is replaced, and SIGTERM or SIGINT stops them all.

    :param count: how many workers.
    :param make_gateway: builds an unconnected gateway (called once here to learn the
        addresses, then once in each worker).
    :param home: the home folder (the cron outbox is in it).
    :param log: receives one line per notable event.
    :param probe: a gateway already built, to learn the addresses from instead.
    """

    def __init__(
        self,
        count: int,
        make_gateway: Callable[[], GatewayCore],
        home: Path,
        log: Callable[[str], None],
        probe: GatewayCore | None = None,
    ) -> None:
        self.count = count
        self.make_gateway = make_gateway
        self.home = home
        self.log = log
        self.workers: dict[int, int] = {}
        """Worker number -> process id of the workers running."""
        self.sockets: dict[tuple[str, int], socket.socket] = {}
        self.urls: dict[str, str] = {}
        """Platform -> where it is served (adapters with a ``url``)."""
        self._stopping = False
        self._deaths: list[float] = []
        self._pid = os.getpid()
        self._probe = probe
        self.loads = listening.Loads(count)
        """The open connections of each worker, shared with them (see :mod:`.listening`)."""

    def open(self) -> Supervisor:
        """Open the listening socket of every platform (a free port for port 0)."""
        probe = self._probe if self._probe is not None else self.make_gateway()
        self._probe = None
        for name, (host, port) in listening_addresses(probe).items():
            if (host, port) not in self.sockets:
                self.sockets[(host, port)] = listening.open_listener(host, port, name)
            bound = self.sockets[(host, port)].getsockname()[1]
            adapter = probe.adapters[name]
            adapter.port = bound  # type: ignore[attr-defined]
            url = getattr(adapter, "url", "")
            if url:
                self.urls[name] = url
        return self

    def run(self) -> int:
        """Start the workers and supervise them until SIGTERM or SIGINT (or :meth:`stop`);
        returns 0, or 1 when workers died too often to go on."""
        if not self.sockets:
            self.open()
        previous = {s: signal.signal(s, self._signalled) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            for number in range(1, self.count + 1):
                self._start(number)
            where = ", ".join(f"{n} at {u}" for n, u in self.urls.items())
            self.log(f"gateway: {self.count} workers serving" + (f" {where}" if where else ""))
            return self._supervise()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._stop_all()
            for sock in self.sockets.values():
                sock.close()

    def stop(self) -> None:
        """Stop every worker (gracefully: each finishes its running turns) and return from
        :meth:`run`."""
        self._stopping = True
        for pid in list(self.workers.values()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def _signalled(self, signum: int, frame: object) -> None:
        if os.getpid() == self._pid:  # not in a worker before it set its own handlers
            self.stop()

    def _start(self, number: int) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                code = self._work(number)
            except BaseException as exc:  # nothing may escape into the supervisor's code
                with contextlib.suppress(Exception):
                    self.log(f"gateway: worker {number} failed: {type(exc).__name__}: {exc}")
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        self.workers[number] = pid

    def _work(self, number: int) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        listening.share(self.sockets, self.loads, number)
        gateway = self.make_gateway()

        async def main() -> int:
            return await serve(gateway, home=self.home, stop=asyncio.Event())

        interrupted = asyncio.run(main())
        if interrupted:
            self.log(f"gateway: worker {number}: {interrupted} turn(s) were interrupted")
        return 0

    def _supervise(self) -> int:
        while self.workers:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            number = next((n for n, p in self.workers.items() if p == pid), None)
            if number is None:
                continue  # not a worker (a process a plugin started)
            del self.workers[number]
            self.loads.gone(number)
            if self._stopping:
                continue
            self.log(f"gateway: worker {number} (pid {pid}) {_how(status)}; starting another")
            now = time.monotonic()
            self._deaths = [t for t in self._deaths if now - t < 60] + [now]
            if len(self._deaths) > RESTARTS_PER_MINUTE:
                self.log(
                    f"gateway: {len(self._deaths)} workers died within a minute; stopping "
                    "(see the lines above for why)"
                )
                self.stop()
                return 1
            self._start(number)
        return 0

    def _stop_all(self) -> None:
        self.stop()
        deadline = time.monotonic() + 120
        while self.workers and time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.05)
                continue
            self.workers = {n: p for n, p in self.workers.items() if p != pid}
        for pid in self.workers.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.workers.clear()


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(number).name}"
        return f"was killed by signal {number}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"
