"""``hermes gateway run``: build and connect every configured adapter, serve them in one event
loop, and shut down gracefully on SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import AgentRunner, HermesError, SessionStore

from . import memory
from .core import GatewayCore
from .outbox import keep_delivering
from .platforms import AdapterFactory, PlatformAdapter
from .routes import Routes, RouteStore
from .session_locks import SessionLocks, shares_sessions
from .settings import GatewaySettingsError, load_settings
from .turn_queue import QueueFactory


def build(
    home: Path,
    config: Mapping[str, Any],
    runner: AgentRunner,
    factories: Mapping[str, AdapterFactory],
    log: Callable[[str], None],
    *,
    session_store: Callable[[], SessionStore] | None = None,
    role: str = "all",
    queues: Mapping[str, QueueFactory] | None = None,
) -> GatewayCore:
    """The gateway of ``config`` with one (unconnected) adapter per configured platform;
    :class:`HermesError` for a configuration that cannot be served. ``session_store`` gives
    the home's store (``CommandContext.session_store``), called in the serving process: a
    message naming another person's session is then refused before anything runs. When other
    processes may run turns of the same sessions (``gateway.workers`` above 1, or a
    ``store.url`` other than SQLite), each turn holds its session's lock: the store's own
    (``hold_session``), else a lock file in ``gateway/locks``.

    With ``gateway.queue`` the turns go through the team's work queue (from ``queues``, the
    registered ones): ``role`` ``front`` serves the platforms and runs no turn, ``worker``
    runs the queued turns and serves no platform, ``all`` does both (see
    :mod:`hermes_gateway.team`)."""
    from .team import check_role, make_queue

    try:
        settings = load_settings(config)
    except GatewaySettingsError as exc:
        raise HermesError(str(exc)) from None
    check_role(role, settings)
    queue = make_queue(settings, queues or {}, log) if settings.queue is not None else None
    if not settings.platforms and role != "worker":
        raise HermesError(
            "no platform is configured: add one under gateway.platforms (see docs/gateway.md)"
        )
    team_routes = queue.routes() if queue is not None else None
    try:
        routes: Routes = team_routes or RouteStore(home / "gateway" / "sessions.json")
    except ValueError as exc:
        raise HermesError(str(exc)) from None
    # other processes may run turns of these sessions: each turn holds its session's lock (the
    # store's own; these files for a store without one)
    shared = shares_sessions(config, settings.workers)
    locks = SessionLocks(home / "gateway" / "locks") if shared else None
    gateway = GatewayCore(
        runner,
        routes,
        settings,
        log=log,
        workspace_root=home / "workspaces",
        session_locks=locks,
        session_store=session_store,
        home=home,
        queue=queue,
    )
    gateway.role = role
    for name, platform in settings.platforms.items() if role != "worker" else ():
        factory = factories.get(platform.adapter)
        if factory is None:
            installed = ", ".join(sorted(factories)) or "none"
            raise HermesError(
                f"gateway.platforms.{name}: no platform adapter {platform.adapter!r} is "
                f"installed (installed: {installed})"
            )
        gateway.adapters[name] = factory(name, platform.options)
        people = {p for (where, _), p in settings.people.by_platform_id.items() if where == name}
        if not (platform.allow_all or platform.allowed_users or people or settings.people.keyed()):
            log(
                f"gateway: {name} allows nobody (set gateway.platforms.{name}.allowed_users, "
                f"allow_all: true, or ids {name}:USER_ID of gateway.users)"
            )
    return gateway


async def serve(
    gateway: GatewayCore,
    *,
    home: Path,
    stop: asyncio.Event,
    ready: Callable[[GatewayCore], None] | None = None,
    handle_signals: bool = True,
) -> int:
    """Connect every adapter, serve until ``stop`` is set (or SIGTERM/SIGINT), then take no
    new message, wait up to ``gateway.drain_timeout`` for the turns under way and disconnect.
    Returns how many turns had to be interrupted. ``gateway: stopped`` is logged only for a
    gateway that had at least one platform connected."""
    loop = asyncio.get_running_loop()
    log = gateway.log
    connected: list[PlatformAdapter] = []
    signals: list[signal.Signals] = []
    outbox: asyncio.Task[None] | None = None
    working: asyncio.Task[None] | None = None
    worker_stop = asyncio.Event()
    frozen = False
    try:
        working = await _start_queue(gateway, worker_stop, stop)
        for name, adapter in gateway.adapters.items():
            await adapter.connect(gateway)
            connected.append(adapter)
            where = getattr(adapter, "url", "")
            log(f"gateway: {name} ready" + (f" at {where}" if where else ""))
        if handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
                signals.append(sig)
        if gateway.settings.outbox_interval > 0 and gateway.adapters:
            outbox = asyncio.ensure_future(
                keep_delivering(
                    home / "cron" / "outbox",
                    gateway.adapters,
                    gateway.settings.outbox_interval,
                    log,
                    gateway.may_deliver,
                )
            )
        if gateway.settings.gc_freeze:
            memory.hold()
            frozen = True
        if ready is not None:
            ready(gateway)
        await stop.wait()
        log(f"gateway: stopping; waiting for {gateway.running_turns} running turn(s)")
        return await gateway.close(gateway.settings.drain_timeout)
    finally:
        worker_stop.set()
        await _stop_queue(gateway, working)
        if outbox is not None:
            outbox.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await outbox
        for sig in signals:
            loop.remove_signal_handler(sig)
        if not gateway.closing:
            await gateway.close(0)
        for adapter in reversed(connected):
            try:
                await adapter.disconnect()
            except Exception as exc:
                log(f"gateway: error while disconnecting: {exc}")
        if frozen:
            memory.release()
        if connected or working is not None:  # a gateway that could not start never ran
            log("gateway: stopped")


async def _start_queue(
    gateway: GatewayCore, worker_stop: asyncio.Event, stop: asyncio.Event
) -> asyncio.Task[None] | None:
    """Connect the team's queue (when configured) and, for a worker, start running its turns
    until ``worker_stop`` is set; a worker whose queue fails sets ``stop``."""
    if gateway.queue is None:
        return None
    await gateway.queue.open()
    if gateway.role not in ("all", "worker"):
        return None
    from .team import work

    log = gateway.log
    working = asyncio.ensure_future(work(gateway, worker_stop))
    working.add_done_callback(lambda done: _worker_ended(done, log, stop))
    log("gateway: running the queued turns")
    return working


async def _stop_queue(gateway: GatewayCore, working: asyncio.Task[None] | None) -> None:
    """Wait for the worker's running turns, then disconnect the queue."""
    if working is not None:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await working
    if gateway.queue is not None:
        with contextlib.suppress(Exception):
            await gateway.queue.close()


def _worker_ended(
    done: asyncio.Task[None], log: Callable[[str], None], stop: asyncio.Event
) -> None:
    """A worker whose queue failed stops the process (its supervisor or operator restarts it)."""
    if not done.cancelled() and done.exception() is not None:
        exc = done.exception()
        log(f"gateway: the worker stopped: {type(exc).__name__}: {exc}")
    stop.set()


class GatewayThread:
    """A gateway served in a background thread (for embedding, tests and benchmarks):
    ``start()`` returns once every adapter is connected; ``stop()`` shuts it down gracefully."""

    def __init__(self, gateway: GatewayCore, home: Path) -> None:
        self.gateway = gateway
        self.home = home
        self.interrupted: int | None = None
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="hermes-gateway", daemon=True)

    def _main(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self.interrupted = await serve(
                self.gateway,
                home=self.home,
                stop=self._stop,
                ready=lambda _: self._ready.set(),
                handle_signals=False,
            )

        try:
            asyncio.run(main())
        except BaseException as exc:
            self.error = exc
        finally:
            self._ready.set()

    def start(self, timeout: float = 30) -> GatewayThread:
        """Start serving; raise what stopped a failed start."""
        self._thread.start()
        self._ready.wait(timeout)
        if self.error is not None:
            raise self.error
        return self

    def stop(self, timeout: float = 120) -> None:
        """Shut down as SIGTERM does and wait for it."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)
