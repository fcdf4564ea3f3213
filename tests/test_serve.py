"""``hermes serve``: a one-shot chat run by a child of the resident process behaves as one run
in-process, and only its own user, unconfined as it is, can hand it a call.

Every test runs real processes: the resident ``hermes serve``, ``hermes chat -q`` callers, and
the test kit's fake model on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core.cli.serve import registration
from hermes_core.cli.serve.calls import servable
from hermes_core.testing import FakeLLM, text, tool_call, wait_until

HERMES = shutil.which("hermes", path=str(Path(sys.executable).parent)) or "hermes"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(home)
    env.update(extra)
    return env


class Resident:
    """A ``hermes serve`` process in the foreground, its log kept."""

    def __init__(self, home: Path, *args: str) -> None:
        self.home = home
        self.log_path = home.parent / f"serve-{home.name}.log"
        self.log_file = open(self.log_path, "w+", encoding="utf-8")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [HERMES, "serve", *args],
            env=_env(home),
            stdin=subprocess.DEVNULL,
            stdout=self.log_file,
            stderr=self.log_file,
        )
        wait_until(
            lambda: self.proc.poll() is not None or registration.read(home) is not None,
            timeout=120,
        )
        assert self.proc.poll() is None, self.log()

    def log(self) -> str:
        """What the resident process wrote so far."""
        return self.log_path.read_text(encoding="utf-8")

    def children_started(self) -> int:
        """How many calls ran in a child."""
        return self.log().count(": running in child ")

    def stop(self) -> None:
        """End the process (SIGTERM) and wait for it."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        self.log_file.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def resident(home: Path) -> Iterator[Resident]:
    server = Resident(home, "--idle-timeout", "300")
    yield server
    server.stop()


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def chat(
    home: Path, llm: FakeLLM, *args: str, cold: bool = False, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``hermes chat -q`` against the fake model (in-process with ``cold``)."""
    extra = dict(env)
    if cold:
        extra["HERMES_SERVE"] = "off"
    argv = [HERMES, "chat", "--provider", "custom", "--base-url", llm.openai_base_url, *args]
    return subprocess.run(
        argv,
        env=_env(home, **extra),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _without_ids(value: Any) -> Any:
    """``value`` with the ids each run makes anew (tool call ids, the task's) replaced by their
    order of appearance."""
    text_form = json.dumps(value, sort_keys=True)
    import re

    ids: dict[str, str] = {}
    for found in re.findall(r'"(?:id|tool_call_id|task_id)": "([^"]+)"', text_form):
        ids.setdefault(found, f"id{len(ids)}")
    for old, new in ids.items():
        text_form = text_form.replace(f'"{old}"', f'"{new}"')
    return json.loads(text_form)


def _comparable(result: dict[str, Any]) -> dict[str, Any]:
    return _without_ids({k: v for k, v in result.items() if k != "session_id"})


def _stored(home: Path, session_id: str) -> list[list[Any]]:
    from hermes_core.host import Host

    store = Host(home=home).session_store
    return _without_ids(  # type: ignore[no-any-return]
        [
            [m.get("role"), m.get("content"), m.get("tool_calls")]
            for m in store.get_messages(session_id)
        ]
    )


def test_warm_and_cold_give_the_same_answer_usage_and_stored_session(
    home: Path, resident: Resident, llm: FakeLLM
) -> None:
    results = {}
    for mode in ("cold", "warm"):
        llm.add(tool_call("get_weather", {"city": "Paris"}), text("Sunny in Paris."))
        done = chat(
            home,
            llm,
            "-q",
            "Weather in Paris?",
            "--json",
            "--model",
            "m1",
            "--toolsets",
            "weather",
            cold=mode == "cold",
        )
        assert done.returncode == 0, done.stderr
        results[mode] = json.loads(done.stdout)
    assert resident.children_started() == 1, resident.log()
    cold, warm = results["cold"], results["warm"]
    assert warm["final_response"] == "Sunny in Paris."
    assert _comparable(warm) == _comparable(cold)
    assert warm["session_id"] != cold["session_id"]
    assert _stored(home, warm["session_id"]) == _stored(home, cold["session_id"])
    first, second = llm.requests[0].json, llm.requests[2].json
    assert first["messages"] == second["messages"] and first["tools"] == second["tools"]


def test_exit_status_and_error_line_are_those_of_the_cold_path(
    home: Path, resident: Resident, llm: FakeLLM
) -> None:
    outcomes = []
    for cold in (True, False):
        done = chat(home, llm, "-q", "hi", "--model", "m1", "--resume", "nosuch", cold=cold)
        outcomes.append((done.returncode, done.stdout, done.stderr))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] != 0 and outcomes[0][2].startswith("hermes: error: ")
    assert resident.children_started() == 1


def test_per_call_options_are_honoured(
    home: Path, resident: Resident, llm: FakeLLM, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "note.txt").write_text("the note says 42\n", encoding="utf-8")
    llm.add(tool_call("read_file", {"path": "note.txt"}), text("It says 42."))
    done = chat(
        home,
        llm,
        "-q",
        "What does note.txt say?",
        "--model",
        "model-a",
        "--toolsets",
        "file",
        "--api-key",
        "key-from-argv",
        cwd=project,
        OPENAI_API_KEY="unused",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It says 42."
    request, after_tool = llm.requests[-2], llm.requests[-1]
    assert request.json["model"] == "model-a"
    assert request.headers.get("authorization") == "Bearer key-from-argv"
    names = sorted(t["function"]["name"] for t in request.json["tools"])
    assert "read_file" in names and "get_weather" not in names
    assert "the note says 42" in json.dumps(after_tool.json["messages"])

    llm.add(text("Still 42."))
    first = chat(home, llm, "-q", "again?", "--json", "-m", "m", "-t", "weather", cold=True)
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout)["session_id"]
    llm.add(text("Yes."))
    resumed = chat(home, llm, "-q", "sure?", "--resume", session, "-m", "m", "-t", "weather")
    assert resumed.returncode == 0, resumed.stderr
    sent = llm.requests[-1].json
    asked = [m["content"] for m in sent["messages"] if m["role"] == "user"]
    assert "again?" in json.dumps(asked[:-1]) and "sure?" in json.dumps(asked[-1])
    assert sorted(t["function"]["name"] for t in sent["tools"]) == ["get_forecast", "get_weather"]
    assert resident.children_started() == 2, resident.log()


def test_environment_of_the_caller_is_the_childs(
    home: Path, resident: Resident, llm: FakeLLM
) -> None:
    llm.add(text("ok"))
    done = subprocess.run(
        [HERMES, "chat", "-q", "hi", "--provider", "custom", "--model", "m"]
        + ["--base-url", llm.openai_base_url],
        env=_env(home, CUSTOM_API_KEY="key-from-env"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert llm.requests[-1].headers.get("authorization") == "Bearer key-from-env"
    assert resident.children_started() == 1


def test_ctrl_c_interrupts_the_call(home: Path, resident: Resident, llm: FakeLLM) -> None:
    outcomes = []
    for cold in (True, False):
        llm.add(text("too late", delay=60))
        before = len(llm.requests)
        proc = subprocess.Popen(
            [HERMES, "chat", "-q", "hi", "--provider", "custom", "--model", "m"]
            + ["--base-url", llm.openai_base_url],
            env=_env(home, **({"HERMES_SERVE": "off"} if cold else {})),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until(lambda: len(llm.requests) > before, timeout=60)  # noqa: B023
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert time.monotonic() - started < 10
        outcomes.append((proc.returncode, out, err.strip().splitlines()[-1:]))
    assert outcomes[0] == outcomes[1]
    assert outcomes[1][0] == 130 and outcomes[1][2][0].startswith("hermes: ")
    assert resident.children_started() == 1


def test_a_caller_that_ignores_ctrl_c_is_not_interrupted(
    home: Path, resident: Resident, llm: FakeLLM
) -> None:
    outcomes = []
    for cold in (True, False):
        llm.add(text("answered anyway", delay=2))
        before = len(llm.requests)
        proc = subprocess.Popen(
            [HERMES, "chat", "-q", "hi", "--provider", "custom", "--model", "m"]
            + ["--base-url", llm.openai_base_url],
            env=_env(home, **({"HERMES_SERVE": "off"} if cold else {})),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # noqa: PLW1509
        )
        wait_until(lambda: len(llm.requests) > before, timeout=60)  # noqa: B023
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        outcomes.append((proc.returncode, out.strip(), err))
    assert outcomes[0] == outcomes[1] == (0, "answered anyway", "")
    assert resident.children_started() == 1


def test_a_killed_caller_takes_its_child_along(
    home: Path, resident: Resident, llm: FakeLLM
) -> None:
    llm.add(text("too late", delay=60))
    proc = subprocess.Popen(
        [HERMES, "chat", "-q", "hi", "--provider", "custom", "--model", "m"]
        + ["--base-url", llm.openai_base_url],
        env=_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: len(llm.requests) == 1, timeout=60)
    proc.kill()
    proc.wait()
    wait_until(lambda: "ended with status -9" in resident.log(), timeout=30)


def test_stale_or_foreign_registrations_fall_back_to_running_in_process(
    home: Path, llm: FakeLLM
) -> None:
    server = Resident(home, "--idle-timeout", "300")
    try:
        found = registration.read(home)
        assert found is not None
        (home / "config.yaml").write_text("agent:\n  max_turns: 5\n", encoding="utf-8")
        llm.add(text("cold after a config change"))
        done = chat(home, llm, "-q", "hi", "--model", "m")
        assert (done.returncode, done.stdout.strip()) == (0, "cold after a config change")
        assert server.children_started() == 0
        server.proc.wait(timeout=30)  # it notices it is stale and ends
        assert registration.read(home) is None
    finally:
        server.stop()

    server = Resident(home, "--idle-timeout", "300")
    try:
        server.proc.kill()  # dies without withdrawing its registration
        server.proc.wait()
        assert registration.read(home) is not None
        llm.add(text("cold after a crash"))
        done = chat(home, llm, "-q", "hi", "--model", "m")
        assert (done.returncode, done.stdout.strip()) == (0, "cold after a crash")
    finally:
        server.stop()

    folder = Path(registration.serve_dir(home))
    stored = (folder / registration.REGISTRATION_NAME).read_bytes()
    import marshal

    other = marshal.loads(stored)
    other.update(pid=os.getpid(), version="0.0.0-other")
    (folder / registration.REGISTRATION_NAME).write_bytes(marshal.dumps(other))
    assert registration.read(home) is None
    llm.add(text("cold for another version"))
    done = chat(home, llm, "-q", "hi", "--model", "m")
    assert (done.returncode, done.stdout.strip()) == (0, "cold for another version")


def test_the_idle_timeout_ends_the_resident_process(home: Path) -> None:
    server = Resident(home, "--idle-timeout", "1")
    try:
        assert server.proc.wait(timeout=30) == 0
        assert registration.read(home) is None
        assert not (Path(registration.serve_dir(home), registration.SOCKET_NAME)).exists()
    finally:
        server.stop()


def test_a_second_resident_process_is_refused_and_status_stop_work(
    home: Path, resident: Resident
) -> None:
    second = subprocess.run(
        [HERMES, "serve"], env=_env(home), capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 1
    assert second.stderr.strip().splitlines() == [
        f"hermes: error: a resident hermes already serves {home} (pid {resident.proc.pid})"
    ]
    status = subprocess.run([HERMES, "serve", "--status"], env=_env(home), capture_output=True)
    assert f"pid {resident.proc.pid} serves {home}; current" in status.stdout.decode()
    stop = subprocess.run([HERMES, "serve", "--stop"], env=_env(home), capture_output=True)
    assert stop.returncode == 0
    assert resident.proc.wait(timeout=30) == 0
    assert registration.read(home) is None


def test_the_serve_folder_is_private(home: Path, resident: Resident) -> None:
    folder = Path(registration.serve_dir(home))
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / registration.SOCKET_NAME).stat().st_mode & 0o777 == 0o600
    assert (folder / registration.REGISTRATION_NAME).stat().st_mode & 0o777 == 0o600


NOBODY_CLIENT = r"""
import marshal, os, socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    conn.connect(sys.argv[1])
except OSError as exc:
    print("connect-failed", exc.errno)
    sys.exit(0)
body = marshal.dumps({"version": sys.argv[2], "key": None, "argv": ["hermes", "chat", "-q", "x"],
                      "env": dict(os.environ), "umask": 0o22, "limits": {}})
cwd = os.open(".", os.O_RDONLY)
try:
    socket.send_fds(conn, [len(body).to_bytes(4, "big") + body], [0, 1, 2, cwd])
    answer = conn.recv(100)
except OSError as exc:
    print("refused", exc.errno)
    sys.exit(0)
print("refused" if not answer else "answered", answer)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="drops to an ordinary user from root")
def test_another_user_cannot_use_it(llm: FakeLLM) -> None:
    base = Path(tempfile.mkdtemp(prefix="hermes-serve-", dir="/var/tmp"))
    try:
        os.chmod(base, 0o755)
        home = base / "home"
        home.mkdir()
        os.chmod(home, 0o755)
        server = Resident(home, "--idle-timeout", "300")
        try:
            socket_path = str(Path(registration.serve_dir(home), registration.SOCKET_NAME))
            script = base / "client.py"
            script.write_text(NOBODY_CLIENT, encoding="utf-8")
            os.chmod(script, 0o644)
            nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            python = "/usr/bin/python3"
            probe = [*nobody, python, str(script), socket_path, "0.1.0"]
            locked = subprocess.run(probe, capture_output=True, text=True, cwd="/", timeout=60)
            assert locked.stdout.startswith("connect-failed 13"), locked.stdout + locked.stderr
            # Even with the folder and socket opened to everyone, the process refuses the
            # call: it checks who is at the other end of the socket.
            os.chmod(registration.serve_dir(home), 0o755)
            os.chmod(socket_path, 0o666)
            opened = subprocess.run(probe, capture_output=True, text=True, cwd="/", timeout=60)
            assert opened.stdout.startswith("refused"), opened.stdout + opened.stderr
            assert server.children_started() == 0
            assert "refused pid" in server.log() and "another user" in server.log()
            assert llm.requests == []
        finally:
            server.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")
def test_a_confined_caller_runs_in_process(home: Path, resident: Resident, llm: FakeLLM) -> None:
    llm.add(text("ran cold"))
    argv = [HERMES, "chat", "-q", "hi", "--provider", "custom", "--model", "m"]
    done = subprocess.run(
        ["unshare", "--ipc", "--uts", *argv, "--base-url", llm.openai_base_url],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "ran cold"), done.stderr
    assert resident.children_started() == 0
    assert "confined differently" in resident.log()


def test_other_interpreter_or_locale_settings_run_in_process(
    home: Path, resident: Resident, llm: FakeLLM
) -> None:
    llm.add(text("ran cold"))
    done = chat(home, llm, "-q", "hi", "--model", "m", PYTHONIOENCODING="latin-1")
    assert (done.returncode, done.stdout.strip()) == (0, "ran cold"), done.stderr
    assert resident.children_started() == 0
    assert "interpreter or locale settings differ" in resident.log()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["chat", "-q", "hi"], True),
        (["--debug", "chat", "--query=hi"], True),
        (["--plugins", "openai", "chat", "-qhi"], True),
        (["chat"], False),
        (["-p", "work", "chat", "-q", "hi"], False),
        (["chat", "--help", "-q", "hi"], False),
        (["sessions", "list"], False),
        (["chat", "--", "-q"], False),
    ],
)
def test_which_calls_a_resident_process_may_run(argv: list[str], expected: bool) -> None:
    assert servable(argv) is expected


def _serve_processes(home: Path) -> list[int]:
    """The ``hermes serve`` processes of ``home`` that run now."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and f"HERMES_HOME={home}".encode() in environ:
            found.append(int(entry.name))
    return found


def _stop_all(home: Path) -> None:
    for pid in _serve_processes(home):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    wait_until(lambda: not _serve_processes(home), timeout=30)


def test_serve_auto_starts_one_resident_process_for_the_calls_after(
    home: Path, llm: FakeLLM
) -> None:
    (home / "config.yaml").write_text("serve:\n  auto: true\n", encoding="utf-8")
    try:
        callers = []
        for n in range(3):
            llm.add(text(f"answer {n}"))
        for _ in range(3):
            argv = [HERMES, "chat", "-q", "hi", "--provider", "custom", "--model", "m"]
            callers.append(
                subprocess.Popen(
                    [*argv, "--base-url", llm.openai_base_url],
                    env=_env(home),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        answers = sorted(proc.communicate(timeout=120)[0].strip() for proc in callers)
        assert answers == ["answer 0", "answer 1", "answer 2"]
        assert [proc.returncode for proc in callers] == [0, 0, 0]
        wait_until(lambda: registration.read(home) is not None, timeout=120)
        found = registration.read(home)
        assert found is not None and _serve_processes(home) == [found["pid"]]
        log = Path(registration.serve_dir(home), "log")
        assert f"serving {home}" in log.read_text(encoding="utf-8")

        llm.add(text("warm now"))
        done = chat(home, llm, "-q", "hi", "--model", "m")
        assert (done.returncode, done.stdout.strip()) == (0, "warm now"), done.stderr
        assert log.read_text(encoding="utf-8").count(": running in child ") == 1
        assert _serve_processes(home) == [found["pid"]]
    finally:
        _stop_all(home)


@pytest.mark.parametrize(
    ("config", "variables"),
    [
        ("", {}),
        ("serve:\n  auto: false\n", {}),
        ("serve:\n  auto: true\n", {"HERMES_SERVE": "off"}),
    ],
)
def test_serve_auto_starts_nothing_unless_asked_for_a_call_that_may_run_warm(
    home: Path, llm: FakeLLM, config: str, variables: dict[str, str]
) -> None:
    (home / "config.yaml").write_text(config, encoding="utf-8")
    try:
        llm.add(text("cold"))
        done = chat(home, llm, "-q", "hi", "--model", "m", **variables)
        assert (done.returncode, done.stdout.strip()) == (0, "cold"), done.stderr
        # a resident process would be holding the lock from its start, before the caller ends
        lock = registration.take_lock(home)
        assert lock is not None
        os.close(lock)
        assert _serve_processes(home) == []
    finally:
        _stop_all(home)


def test_serve_auto_does_not_retry_at_once_after_a_failed_start(home: Path, llm: FakeLLM) -> None:
    (home / "config.yaml").write_text("serve:\n  auto: true\n", encoding="utf-8")
    folder = Path(registration.serve_dir(home))
    folder.mkdir(mode=0o700)
    (folder / "log").write_text("hermes: error: a plugin failed to load\n", encoding="utf-8")
    try:
        llm.add(text("cold"))
        done = chat(home, llm, "-q", "hi", "--model", "m")
        assert (done.returncode, done.stdout.strip()) == (0, "cold"), done.stderr
        lock = registration.take_lock(home)
        assert lock is not None
        os.close(lock)
        assert _serve_processes(home) == []
        assert "a plugin failed to load" in (folder / "log").read_text(encoding="utf-8")
    finally:
        _stop_all(home)


def test_serve_auto_leaves_a_starting_or_serving_process_alone(
    home: Path, resident: Resident, llm: FakeLLM
) -> None:
    (home / "config.yaml").write_text("serve:\n  auto: true\n", encoding="utf-8")
    resident.proc.wait(timeout=30)  # stale: its configuration changed
    second = Resident(home, "--idle-timeout", "300")
    try:
        llm.add(text("refused, so cold"))
        done = chat(home, llm, "-q", "hi", "--model", "m", PYTHONIOENCODING="latin-1")
        assert (done.returncode, done.stdout.strip()) == (0, "refused, so cold"), done.stderr
        assert _serve_processes(home) == [second.proc.pid]
        started = subprocess.run(
            [HERMES, "serve", "--background"], env=_env(home), capture_output=True, text=True
        )
        assert started.returncode == 1
    finally:
        second.stop()


JOB_SHELL = r"""
import os, signal, sys, time
report, go_on, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    while os.tcgetpgrp(0) != os.getpgrp():
        time.sleep(0.001)
    signal.signal(signal.SIGTTOU, signal.SIG_DFL)
    os.execv(argv[0], argv)
os.setpgid(pid, pid)
os.tcsetpgrp(0, pid)
os.write(report, b"started %d\n" % pid)
_, status = os.waitpid(pid, os.WUNTRACED)
if os.WIFSTOPPED(status):
    os.write(report, b"stopped\n")
    os.read(go_on, 1)
    os.tcsetpgrp(0, pid)
    os.killpg(pid, signal.SIGCONT)
    _, status = os.waitpid(pid, 0)
os.write(report, b"ended %d\n" % os.waitstatus_to_exitcode(status))
"""
"""A shell's job control, in short: run a command as the terminal's foreground job, report
when it stops, continue it in the foreground when told."""


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]


def _drain(fd: int) -> bytes:
    import select

    out = b""
    while select.select([fd], [], [], 0.2)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out


def test_ctrl_z_stops_and_fg_resumes_a_warm_call_as_a_cold_one(
    home: Path, resident: Resident, llm: FakeLLM
) -> None:
    import fcntl
    import pty
    import termios

    for cold in (True, False):
        llm.add(text("answered after fg", delay=3))
        before = len(llm.requests)
        master, slave = pty.openpty()
        report_r, report_w = os.pipe()
        go_r, go_w = os.pipe()
        argv = [HERMES, "chat", "-q", "hi", "--provider", "custom", "--model", "m"]
        shell = subprocess.Popen(
            [sys.executable, "-c", JOB_SHELL, str(report_w), str(go_r), *argv]
            + ["--base-url", llm.openai_base_url],
            env=_env(home, **({"HERMES_SERVE": "off"} if cold else {})),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            pass_fds=(report_w, go_r),
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # noqa: PLW1509
        )
        os.close(slave)
        os.close(report_w)
        os.close(go_r)
        reports = os.fdopen(report_r, "rb")
        try:
            caller = int(reports.readline().split()[1])
            wait_until(lambda: len(llm.requests) > before, timeout=60)  # noqa: B023
            os.write(master, b"\x1a")  # Ctrl-Z
            assert reports.readline() == b"stopped\n"
            running = caller if cold else int(resident.log().rsplit("running in child ", 1)[1])
            assert wait_until(lambda: _state(running) == "T", timeout=10)  # noqa: B023
            time.sleep(4)  # the answer is there, but no stopped process reads it
            assert _state(running) == "T"
            assert b"answered after fg" not in _drain(master)
            os.write(go_w, b"x")  # fg
            assert reports.readline() == b"ended 0\n"
            assert b"answered after fg" in _drain(master)
        finally:
            shell.wait(timeout=60)
            for fd in (master, go_w):
                os.close(fd)
            reports.close()
    assert resident.children_started() == 1
