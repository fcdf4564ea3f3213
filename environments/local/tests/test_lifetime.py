"""Commands of the local environment die with hermes, however hermes dies, and live as long as
they should while it runs (whatever thread started them)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from hermes_env_local import LocalEnvironment
from hermes_env_local.guard import GATE_PREAMBLE, Guard, process_guard, spawn_gated
from hermes_env_sandbox import SandboxSettings

from hermes_core.testing.environment_suite import process_alive, wait_for

OFF = SandboxSettings(profile="off")
"""These tests are about the unsandboxed path (the sandbox's own: test_sandbox.py)."""


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")

# A hermes-like program: commands run on worker threads of a pool (as tool calls do), the pool's
# threads come and go, and a background process runs beside them.
PROGRAM = textwrap.dedent(
    """
    import json, sys, time
    from concurrent.futures import ThreadPoolExecutor
    from hermes_env_local import LocalEnvironment
    from hermes_env_sandbox import SandboxSettings

    folder = sys.argv[1]
    env = LocalEnvironment(folder, sandbox=SandboxSettings(profile="off"))
    # a background process with a child of its own
    env.start_background("sleep 300 & echo $! > bg-child; echo $$ > bg-shell; wait")
    # a thread that starts a background process and ends at once
    pool = ThreadPoolExecutor(1)
    pool.submit(env.start_background, "echo $$ > bg-thread; exec sleep 300").result()
    pool.shutdown()
    # foreground commands on worker threads, still running when hermes dies; one of them
    # moves a job to a process group of its own (job control), in the same session
    workers = ThreadPoolExecutor(2)
    workers.submit(env.run, "echo $$ > fg-shell; sleep 300")
    workers.submit(env.run, "set -m; sleep 300 & echo $! > fg-job; wait")
    names = ["bg-child", "bg-shell", "bg-thread", "fg-shell", "fg-job"]
    import os
    while not all(os.path.exists(f"{folder}/{n}") and open(f"{folder}/{n}").read().strip()
                  for n in names):
        time.sleep(0.02)
    pids = {n: int(open(f"{folder}/{n}").read()) for n in names}
    print(json.dumps(pids), flush=True)
    time.sleep(600)
    """
)


def start_program(tmp_path: Path) -> tuple[subprocess.Popen[str], dict[str, int]]:
    script = tmp_path / "hermes_like.py"
    script.write_text(PROGRAM)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the program ended early (exit {proc.wait()})"
    pids = json.loads(line)
    assert all(process_alive(pid) for pid in pids.values()), pids
    return proc, pids


@needs_proc
def test_commands_die_when_hermes_is_killed(tmp_path):
    proc, pids = start_program(tmp_path)
    proc.send_signal(signal.SIGKILL)  # no atexit, no clean-up: only the guard can act
    proc.wait()
    started = time.monotonic()
    wait_for(lambda: not any(process_alive(pid) for pid in pids.values()), timeout=5)
    survivors = {name: pid for name, pid in pids.items() if process_alive(pid)}
    assert survivors == {}
    assert time.monotonic() - started < 5


@needs_proc
def test_commands_die_when_hermes_is_terminated(tmp_path):
    proc, pids = start_program(tmp_path)
    proc.send_signal(signal.SIGTERM)  # Python's default: die at once, no atexit either
    proc.wait()
    wait_for(lambda: not any(process_alive(pid) for pid in pids.values()), timeout=5)


@needs_proc
def test_guard_runs_in_a_session_of_its_own(tmp_path):
    env = LocalEnvironment(str(tmp_path), sandbox=OFF)
    try:
        env.run("true")
        pid = process_guard.pid
        assert pid is not None and process_alive(pid)
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        assert int(fields[2]) == pid and int(fields[3]) == pid  # its own group and session
        assert os.getsid(0) != pid
    finally:
        env.cleanup()


@needs_proc
def test_guard_exits_when_hermes_exits(tmp_path):
    code = textwrap.dedent(
        """
        from hermes_env_local import LocalEnvironment
        from hermes_env_sandbox import SandboxSettings
        from hermes_env_local.guard import process_guard
        env = LocalEnvironment(".", sandbox=SandboxSettings(profile="off"))
        env.run("true")
        print(process_guard.pid, flush=True)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    guard_pid = int(out.stdout)
    wait_for(lambda: not process_alive(guard_pid), timeout=5)


def test_background_started_by_a_thread_that_ends_keeps_running(tmp_path):
    env = LocalEnvironment(str(tmp_path), sandbox=OFF)
    try:
        ids = []
        worker = threading.Thread(
            target=lambda: ids.append(env.start_background("sleep 1.5; echo finished > done"))
        )
        worker.start()
        worker.join()
        assert not worker.is_alive()
        time.sleep(0.5)  # a death signal tied to the thread would have struck by now
        assert env.poll(ids[0]).running
        wait_for(lambda: not env.poll(ids[0]).running, timeout=10)
        state = env.poll(ids[0])
        assert state.exit_code == 0
        assert (tmp_path / "done").read_text() == "finished\n"
    finally:
        env.cleanup()


def test_foreground_from_short_lived_threads_ends_normally(tmp_path):
    """Each command runs on a thread of its own that ends with it; none is cut short."""
    env = LocalEnvironment(str(tmp_path), sandbox=OFF)
    try:
        results = []
        threads = [
            threading.Thread(target=lambda i=i: results.append(env.run(f"sleep 0.3; echo {i}")))
            for i in range(4)
        ]
        for thread in threads:
            thread.start()
            time.sleep(0.05)  # earlier threads end while later commands still run
        for thread in threads:
            thread.join()
        assert sorted(r.output for r in results) == [f"{i}\n" for i in range(4)]
        assert all(r.exit_code == 0 for r in results)
    finally:
        env.cleanup()


def test_groups_are_registered_while_they_run_and_released_after(tmp_path):
    env = LocalEnvironment(str(tmp_path), sandbox=OFF)
    try:
        process_id = env.start_background("echo $$ > pid; sleep 30")
        wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text(), 5)
        leader = int((tmp_path / "pid").read_text())
        assert leader in process_guard.groups
        env.run("echo $$ > fg")
        assert int((tmp_path / "fg").read_text()) not in process_guard.groups
        env.kill(process_id)
        assert leader not in process_guard.groups
    finally:
        env.cleanup()


def test_a_gate_that_never_opens_runs_nothing(tmp_path):
    """If hermes could not register the group (or died first), the command never runs."""
    preamble = tmp_path / "gate.sh"
    preamble.write_text(GATE_PREAMBLE)
    canary = tmp_path / "canary"

    def refuse(pid: int) -> None:
        raise RuntimeError("cannot register")

    with pytest.raises(RuntimeError, match="cannot register"):
        spawn_gated(
            ["bash", "--noprofile", "--norc", "-c", f"touch {canary}"],
            env={"PATH": os.environ["PATH"], "BASH_ENV": str(preamble)},
            register=refuse,
        )
    time.sleep(0.2)
    assert not canary.exists()


def open_fds(listing: str) -> dict[int, str]:
    """``ls -l /proc/PID/fd`` as {fd: target}."""
    fds = {}
    for line in listing.splitlines():
        if " -> " in line:
            left, target = line.split(" -> ", 1)
            fds[int(left.split()[-1])] = target
    return fds


def test_the_gate_is_invisible_to_the_command(tmp_path):
    env = LocalEnvironment(str(tmp_path), sandbox=OFF)
    try:
        assert env.run('echo "[${__HERMES_GATE-}]"').output == "[]\n"
        env.run("ls -l /proc/$$/fd > fg-fds")
        fds = open_fds((tmp_path / "fg-fds").read_text())
        # stdin, the output pipe, and the write end of the state pipe; the gate is closed
        assert sorted(fds) == [0, 1, 2, max(fds)] and len(fds) == 4
        env.start_background("ls -l /proc/$$/fd > bg-fds; true")
        wait_for(
            lambda: (tmp_path / "bg-fds").exists() and env.list_background()[-1].running is False, 5
        )
        assert sorted(open_fds((tmp_path / "bg-fds").read_text())) == [0, 1, 2]
        process_id = env.start_background('echo "[${__HERMES_GATE-}][${BASH_ENV-}]"')
        wait_for(lambda: not env.poll(process_id).running, timeout=5)
        assert env.read_output(process_id)[0] == "[][]\n"
    finally:
        env.cleanup()


@needs_proc
def test_a_guard_that_died_is_replaced_and_told_every_live_group(tmp_path):
    own = Guard()
    try:
        own.watch(os.getpid() + 10_000_000)  # an id no process has
        first = own.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: not process_alive(first), timeout=5)
        sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
        try:
            own.watch(sleeper.pid)  # the write fails, a new guard is started
            assert own.pid not in (None, first)
            assert sleeper.pid in own.groups
            replacement = own.pid
            own._drop()  # as if hermes died: the new guard sees end of file
            wait_for(lambda: sleeper.poll() is not None, timeout=5)
            assert sleeper.returncode == -signal.SIGKILL
            wait_for(lambda: not process_alive(replacement), timeout=5)
        finally:
            sleeper.kill()
            sleeper.wait()
    finally:
        own._drop()


def test_no_guard_no_command(tmp_path, monkeypatch):
    """Fail closed: when the guard cannot start, the command is refused and never runs."""
    import hermes_env_local.guard as guard_module

    from hermes_hookspecs import EnvironmentUnavailable

    monkeypatch.setattr(guard_module, "_PROGRAM", str(tmp_path / "missing_guard.py"))
    own = Guard()
    preamble = tmp_path / "gate.sh"
    preamble.write_text(GATE_PREAMBLE)
    canary = tmp_path / "canary"
    with pytest.raises(EnvironmentUnavailable, match="guard process .* did not start"):
        spawn_gated(
            ["bash", "--noprofile", "--norc", "-c", f"touch {canary}"],
            env={"PATH": os.environ["PATH"], "BASH_ENV": str(preamble)},
            register=own.watch,
        )
    time.sleep(0.2)
    assert not canary.exists()
    assert own.pid is None
    assert own.groups == frozenset()  # the refused shell's id is not killed later


SANDBOXED_PROGRAM = textwrap.dedent(
    """
    import sys, time
    from concurrent.futures import ThreadPoolExecutor
    from hermes_env_local import LocalEnvironment

    env = LocalEnvironment(sys.argv[1])  # the default: every command in the sandbox
    env.start_background("sleep 301.5 & wait")
    ThreadPoolExecutor(1).submit(env.run, "sleep 302.5")
    print("started", flush=True)
    time.sleep(600)
    """
)


def sandboxed_sleepers() -> list[int]:
    """This machine's pids of the sandboxed sleepers the program started."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if argv[:1] == [b"sleep"] and argv[1:2] in ([b"301.5"], [b"302.5"]):
            if process_alive(int(entry)):
                found.append(int(entry))
    return found


@needs_proc
def test_sandboxed_commands_die_when_hermes_is_killed(tmp_path):
    from hermes_env_sandbox import unavailable_reason

    if unavailable_reason() is not None:
        pytest.skip(f"no sandbox here: {unavailable_reason()}")
    script = tmp_path / "sandboxed_hermes.py"
    script.write_text(SANDBOXED_PROGRAM)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "started\n"
    wait_for(lambda: len(sandboxed_sleepers()) == 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_for(lambda: not sandboxed_sleepers(), timeout=5)
