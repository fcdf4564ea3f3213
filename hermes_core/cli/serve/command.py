"""``hermes serve``: start, stop or show the resident process of the home folder."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click

from hermes_hookspecs import HermesError

from . import ForkedCall, registration

DEFAULT_IDLE_TIMEOUT = 900.0


@click.command("serve")
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_IDLE_TIMEOUT,
    show_default=True,
    help="Seconds without a call before the resident process ends.",
)
@click.option("--background", is_flag=True, help="Start in the background, return once ready.")
@click.option("--stop", is_flag=True, help="Stop the resident process of this home.")
@click.option("--status", is_flag=True, help="Say whether a resident process serves this home.")
@click.option("--lock-fd", type=int, hidden=True, help="The home's serve lock, held already.")
@click.pass_context
def serve(
    ctx: click.Context,
    idle_timeout: float,
    background: bool,
    stop: bool,
    status: bool,
    lock_fd: int | None,
) -> None:
    """Keep hermes loaded: `hermes chat -q` runs in a child of this process.

    The resident process loads the configuration, every plugin and the providers' SDKs once;
    each one-shot chat of the same user, with the same install and configuration, then runs
    in a child forked from it, with the caller's files, folder, environment and options.
    Any other call, or any difference, runs in-process as before.
    """
    from hermes_runtime.home import default_home

    home = default_home()
    if stop or status:
        _stop_or_status(home, stop)
        return
    if ctx.find_root().obj.profile is not None:
        raise HermesError("serve takes no --profile: it serves $HERMES_HOME")
    if not home.is_dir():
        raise HermesError(f"{home} does not exist yet; run `hermes setup` first")
    _refuse_a_second(home)
    lock = registration.take_lock(home) if lock_fd is None else lock_fd
    if lock is None:
        raise HermesError(f"a resident hermes is starting for {home}")
    try:
        os.set_inheritable(lock, False)
    except OSError as exc:
        raise HermesError(f"--lock-fd {lock}: {exc.strerror}") from None
    if background:
        _start_in_background(home, idle_timeout, lock)
        return
    _serve(home, idle_timeout, lock, announce=_log, log=_log)


def _refuse_a_second(home: Path) -> None:
    """Fail at once when a resident process already answers for ``home``."""
    from .client import connect

    found = registration.read(home)
    conn = None if found is None else connect(found)
    if found is not None and conn is not None:
        conn.close()
        raise HermesError(f"a resident hermes already serves {home} (pid {found['pid']})")


def _log(line: str) -> None:
    click.echo(f"hermes: {line}" if not line.startswith("hermes:") else line, err=True)


def _serve(
    home: Path,
    idle_timeout: float,
    lock: int,
    announce: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> None:
    from ..app import main
    from .server import Server
    from .warmup import warm_up

    warm_up(main)
    server = Server(home, idle_timeout, lock, log)
    try:
        server.start()
        if announce is not None:
            announce(f"hermes: serving {home} (pid {os.getpid()}, idle timeout {idle_timeout:g} s)")
        call = server.serve()
    finally:
        server.close()
    if call is not None:
        raise ForkedCall(call)


def _start_in_background(home: Path, idle_timeout: float, lock: int) -> None:
    """Fork a resident process of its own session, with its output discarded, and return once
    it is announced."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)

        def ready(_: str) -> None:
            os.write(write_end, b"1")
            os.close(write_end)

        _serve(home, idle_timeout, lock, announce=ready)
        raise SystemExit(0)
    os.close(write_end)
    os.close(lock)  # the resident process holds it
    with os.fdopen(read_end, "rb") as pipe:
        started = pipe.read(1)
    if started != b"1":
        raise HermesError("the resident process did not start; run `hermes serve` to see why")
    click.echo(f"hermes: serving {home} in the background (pid {child})")


def _stop_or_status(home: Path, stop: bool) -> None:
    from .client import connect

    found = registration.read(home)
    conn = None if found is None else connect(found)
    if found is None or conn is None:
        click.echo(f"hermes: no resident process serves {home}")
        if stop:
            sys.exit(1)
        return
    conn.close()
    pid = found["pid"]
    if not stop:
        current = found["key"] == registration.current_key(home)
        state = "current" if current else "stale (install or configuration changed)"
        click.echo(f"hermes: pid {pid} serves {home}; {state}")
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while registration.alive(pid) and _announced(home, pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    click.echo(f"hermes: stopped the resident process (pid {pid})")


def _announced(home: Path, pid: int) -> bool:
    found = registration.read(home)
    return found is not None and found["pid"] == pid
