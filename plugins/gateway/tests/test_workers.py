"""gateway.workers: several processes behind one address, sharing the sessions. A session's
consecutive turns are served by whichever worker takes the connection (a killed worker's
successor included) with the whole history; concurrent turns of one session still run one at a
time; a dying worker is replaced and reported."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hermes_gateway.routes import RouteStore
from hermes_gateway.settings import GatewaySettingsError, load_settings
from hermes_gateway.workers import listening_addresses

from hermes_core.testing import FakeLLM, SQLiteSessionStore, isolated_environ, wait_until
from hermes_hookspecs import HermesError

KEY = "workers-test-key"


def _count_users(request: Any) -> dict[str, Any]:
    """Answers with how many user messages the model was sent: the session's history so far."""
    users = [m for m in request.json["messages"] if m["role"] == "user"]
    return {"text": f"seen {len(users)}: {users[-1]['content']}", "delay": 0.3}


class Served:
    """``hermes gateway run --workers N`` in a real process, its log read as it comes."""

    def __init__(self, home: Path, server: FakeLLM, workers: int) -> None:
        config = {
            "model": {
                "provider": "custom",
                "base_url": server.openai_base_url,
                "default": "fake-model",
                "api_key": "test",
            },
            "agent": {"api_max_retries": 0},
            "toolsets": [],
            "gateway": {
                "drain_timeout": 30,
                "outbox_interval": 0,
                "platforms": {
                    "api": {"adapter": "api_server", "port": 0, "key": KEY, "allow_all": True}
                },
            },
        }
        (home / "config.yaml").write_text(json.dumps(config))
        self.home = home
        self.lines: list[str] = []
        code = "import sys; from hermes_core.cli import main; sys.exit(main())"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, "gateway", "run", "--workers", str(workers)],
            env=isolated_environ(home),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert wait_until(lambda: self.url is not None, timeout=60), self.log
        assert wait_until(lambda: len(self.workers()) == workers, timeout=30), self.log

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    @property
    def log(self) -> str:
        return "\n".join(self.lines)

    @property
    def url(self) -> str | None:
        for line in self.lines:
            found = re.search(r"workers serving api at (\S+)", line)
            if found:
                return found.group(1)
        return None

    def workers(self) -> list[int]:
        """The worker processes running now."""
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(p) for p in path.read_text().split()]

    def ask(self, text: str, session: str | None = None) -> tuple[str, str]:
        """The answer to ``text`` and the session it was in."""
        headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
        if session:
            headers["X-Hermes-Session-Id"] = session
        body = {"model": "m", "messages": [{"role": "user", "content": text}]}
        request = urllib.request.Request(
            f"{self.url}/chat/completions", data=json.dumps(body).encode(), headers=headers
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            data = json.loads(answer.read())
            return data["choices"][0]["message"]["content"], answer.headers["X-Hermes-Session-Id"]

    def stop(self) -> tuple[int, str]:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        self._reader.join(10)
        return code, self.log


def _replaced(served: Served, dead: int) -> bool:
    running = served.workers()
    return len(running) == 2 and dead not in running


def test_two_workers_continue_one_session_and_a_killed_worker_is_replaced(tmp_path):
    with FakeLLM() as server:
        server.add(*([_count_users] * 20))
        served = Served(tmp_path, server, workers=2)
        try:
            first, second = served.workers()
            answer, session = served.ask("one")
            assert answer == "seen 1: one"
            # every later turn of the session is served by whichever worker is left: the one
            # that did not die, then the successor of the one that did
            os.kill(first, signal.SIGKILL)
            assert served.ask("two", session) == ("seen 2: two", session)
            assert wait_until(lambda: _replaced(served, first), timeout=30), served.log
            os.kill(second, signal.SIGKILL)
            assert served.ask("three", session) == ("seen 3: three", session)
            assert wait_until(lambda: _replaced(served, second), timeout=30), served.log
            for n, word in enumerate(["four", "five", "six"], start=4):
                assert served.ask(word, session) == (f"seen {n}: {word}", session)
        finally:
            code, log = served.stop()
    assert code == 0, log
    assert f"worker 1 (pid {first}) was killed by SIGKILL; starting another" in log
    assert f"worker 2 (pid {second}) was killed by SIGKILL; starting another" in log
    assert "Traceback" not in log
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    messages = store.get_messages(session)
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert users == ["one", "two", "three", "four", "five", "six"]
    assert [m["content"] for m in messages if m["role"] == "assistant"][-1] == "seen 6: six"


def test_concurrent_turns_of_one_session_run_one_at_a_time_across_workers(tmp_path):
    with FakeLLM() as server:
        server.add(*([_count_users] * 20))
        served = Served(tmp_path, server, workers=2)
        try:
            _, session = served.ask("start")
            answers: list[str] = []

            def ask(word: str) -> None:
                answers.append(served.ask(word, session)[0])

            askers = [threading.Thread(target=ask, args=(f"w{n}",)) for n in range(4)]
            for asker in askers:
                asker.start()
            for asker in askers:
                asker.join(60)
        finally:
            code, log = served.stop()
    assert code == 0, log
    # one at a time: each turn saw every earlier one, so each saw a different history
    assert sorted(int(a.split()[1].rstrip(":")) for a in answers) == [2, 3, 4, 5], answers
    started = sorted(r.received_at for r in server.model_requests)
    assert all(b - a >= 0.25 for a, b in zip(started, started[1:], strict=False)), started
    # held by the store's lock (files beside sessions.db, gone once let go), not the fallback
    assert os.listdir(tmp_path / "sessions.db.locks") == []
    assert not (tmp_path / "gateway" / "locks").exists()


def test_a_worker_that_cannot_start_is_reported_and_the_gateway_stops(tmp_path):
    with FakeLLM() as server:
        served = Served(tmp_path, server, workers=2)
        try:
            (tmp_path / "gateway").mkdir(exist_ok=True)
            (tmp_path / "gateway" / "sessions.json").write_text("not json")
            for pid in served.workers():
                os.kill(pid, signal.SIGKILL)
            assert wait_until(lambda: served.process.poll() is not None, timeout=60), served.log
        finally:
            code, log = served.stop()
    assert code == 1
    assert "is not a readable sessions file" in log
    assert "workers died within a minute; stopping" in log
    assert log.splitlines()[-1] == "hermes: error: the gateway stopped: its workers kept dying"
    assert "Traceback" not in log


def test_route_changes_of_two_processes_are_all_kept(tmp_path):
    path = tmp_path / "gateway" / "sessions.json"
    one, other = RouteStore(path), RouteStore(path)
    one.assign("a", "session_a")
    assert other.session_of("a") == "session_a"
    other.assign("b", "session_b")
    one.remember_response("resp_1", "session_a")  # made on top of what the other wrote
    again = RouteStore(path)
    assert (again.session_of("a"), again.session_of("b")) == ("session_a", "session_b")
    assert other.session_of_response("resp_1") == "session_a"
    other.forget("a")
    assert one.session_of("a") is None


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "2"])
def test_workers_must_be_a_whole_number_of_at_least_one(value):
    with pytest.raises(GatewaySettingsError, match="gateway.workers must be a whole number"):
        load_settings({"gateway": {"workers": value}})


def test_a_platform_that_listens_on_no_address_cannot_have_several_workers():
    class Polling:
        pass

    class Gateway:
        adapters = {"chat": Polling()}

    with pytest.raises(HermesError, match="the platform chat does not listen on an address"):
        listening_addresses(Gateway())  # type: ignore[arg-type]


def test_a_session_lock_held_elsewhere_is_waited_for_and_a_cancel_ends_the_wait(tmp_path):
    from hermes_gateway.session_locks import SessionLocks

    one, other = SessionLocks(tmp_path / "locks"), SessionLocks(tmp_path / "locks")
    never = threading.Event()
    order: list[str] = []
    with one.hold("session_x", never) as held:
        assert held

        def wait() -> None:
            with other.hold("session_x", never) as got:
                order.append(f"other got it: {got}")

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.3)
        with other.hold("session_y", never) as unrelated:
            assert unrelated  # another session's lock is free
        order.append("one releases")
    waiter.join(10)
    assert order == ["one releases", "other got it: True"]
    cancel = threading.Event()
    with one.hold("session_x", never):
        threading.Timer(0.2, cancel.set).start()
        with other.hold("session_x", cancel) as got:
            assert got is False
    assert os.listdir(tmp_path / "locks") == []  # a lock file lives only while it is used


def _slow_echo(request: Any) -> dict[str, Any]:
    return {"text": f"echo: {request.json['messages'][-1]['content']}", "delay": 1.5}


def _established(pid: int, port: int) -> int:
    """How many TCP connections to ``port`` the process ``pid`` holds open."""
    owned = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            owned.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue  # closed meanwhile
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "01" and f"socket:[{fields[9]}]" in owned:
                count += 1
    return count


def test_a_burst_of_connections_is_shared_among_the_workers(tmp_path):
    """Connections that arrive together are not all taken by the worker that wakes first:
    with keep-alive, a worker's connections bring it all their later requests too."""
    with FakeLLM() as server:
        server.add(*([_slow_echo] * 40))
        served = Served(tmp_path, server, workers=2)
        try:
            assert served.url is not None
            assert wait_until(lambda: served.log.count("api ready") == 2, timeout=30), served.log
            port = int(served.url.rsplit(":", 1)[1].split("/")[0])
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
            request = (
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}"
            ).encode()
            clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(16)]
            try:
                for client in clients:
                    client.sendall(request)
                workers = served.workers()
                assert wait_until(
                    lambda: sum(_established(w, port) for w in workers) == 16, timeout=10
                )
                held = [_established(w, port) for w in workers]
                assert min(held) >= 3, held  # an even share is 8; taking all at once left 0
                for client in clients:
                    client.settimeout(30)
                    assert b"echo: hi" in client.recv(65536)
            finally:
                for client in clients:
                    client.close()
        finally:
            code, log = served.stop()
    assert code == 0, log
