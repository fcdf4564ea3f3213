"""A team on this machine for the tests and the benchmark: ``hermes gateway run --role front``
and ``--role worker`` as real processes, each with a home of its own (as on separate machines),
sharing one PostgreSQL database for the sessions and the queue."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hermes_core.testing import isolated_environ, wait_until

KEY = "team-test-key"


def team_config(database: str, model_url: str, **gateway: Any) -> dict[str, Any]:
    """The configuration every process of the team reads."""
    return {
        "model": {
            "provider": "custom",
            "base_url": model_url,
            "default": "fake-model",
            "api_key": "test",
        },
        "agent": {"api_max_retries": 0},
        "toolsets": [],
        "store": {"url": database},
        "gateway": {
            "drain_timeout": 30,
            "outbox_interval": 0,
            "queue": {"url": database},
            "platforms": {
                "api": {"adapter": "api_server", "port": 0, "key": KEY, "allow_all": True}
            },
            **gateway,
        },
    }


class Member:
    """One ``hermes gateway run --role ROLE`` process, its log read as it comes."""

    def __init__(
        self, home: Path, config: dict[str, Any], role: str, env: dict[str, str] | None = None
    ) -> None:
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.yaml").write_text(json.dumps(config))
        self.home = home
        self.role = role
        self.lines: list[str] = []
        code = "import sys; from hermes_core.cli import main; sys.exit(main())"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, "gateway", "run", "--role", role],
            env={**isolated_environ(home), **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    @property
    def log(self) -> str:
        """What it logged so far."""
        return "\n".join(self.lines)

    def ready(self, timeout: float = 60) -> Member:
        """Wait until it serves (a front end) or runs the queued turns (a worker)."""
        wanted = "ready at" if self.role == "front" else "running the queued turns"
        found = wait_until(lambda: wanted in self.log, timeout=timeout)
        assert found, f"{self.role} did not start:\n{self.log}"
        return self

    @property
    def url(self) -> str:
        """The API server's base URL (a front end)."""
        for line in self.lines:
            found = re.search(r"api ready at (\S+)", line)
            if found:
                return found.group(1)
        raise AssertionError(f"no address yet:\n{self.log}")

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, then wait; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(10)
            self._reader.join(10)

    def kill(self) -> None:
        """SIGKILL, as a machine dying would."""
        self.process.kill()
        self.process.wait(10)


def ask(
    url: str, text: str, session: str | None = None, timeout: float = 60, stream: bool = False
) -> tuple[int, str, str]:
    """POST a chat completion: (status, answer or error text, session id)."""
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    if session:
        headers["X-Hermes-Session-Id"] = session
    body = {"model": "m", "messages": [{"role": "user", "content": text}], "stream": stream}
    request = urllib.request.Request(
        f"{url}/chat/completions", data=json.dumps(body).encode(), headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            raw = answer.read().decode()
            sid = answer.headers["X-Hermes-Session-Id"]
            if stream:
                pieces = []
                for line in raw.splitlines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        for choice in json.loads(line[6:]).get("choices", []):
                            pieces.append(choice.get("delta", {}).get("content") or "")
                return answer.status, "".join(pieces), sid
            data = json.loads(raw)
            return answer.status, data["choices"][0]["message"]["content"], sid
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), exc.headers.get("X-Hermes-Session-Id") or ""


class Receiver:
    """A local HTTP server recording the webhook's deliveries (its ``deliver_url``)."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._changed:
                    receiver.posts.append(json.loads(body))
                    receiver._changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        """Where the webhook delivers."""
        return f"http://127.0.0.1:{self.server.server_port}/hook"

    def events(self, kind: str) -> list[dict[str, Any]]:
        """The deliveries of one ``type``."""
        with self._changed:
            return [e for e in self.posts if e.get("type") == kind]

    def wait_for(self, count: int, kind: str = "message", timeout: float = 15) -> list[dict]:
        """The deliveries of ``kind`` once there are ``count`` (or the timeout passed)."""
        with self._changed:
            self._changed.wait_for(
                lambda: len([e for e in self.posts if e.get("type") == kind]) >= count, timeout
            )
        return self.events(kind)

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
