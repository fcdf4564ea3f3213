"""A fake of the ``modal`` SDK at the boundary the modal environment calls.

The fake implements exactly the surface ``hermes_env_modal`` uses (``App.lookup``,
``Image.from_registry``, ``Sandbox.create`` / ``from_name``, ``sandbox.exec(*argv, text=False,
stderr=...)`` with ``stdin.write`` / ``write_eof`` / ``drain``, iterable ``stdout``, ``poll()``,
``sandbox.terminate()``) and runs each exec as a local subprocess, so the whole behaviour suite
runs against it. Every call is recorded for the tests to inspect.
"""

from __future__ import annotations

import enum
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import types
from typing import Any

import pytest


class NotFoundError(Exception):
    pass


class AuthError(Exception):
    pass


class StreamType(enum.Enum):
    DEVNULL = subprocess.DEVNULL
    PIPE = subprocess.PIPE
    STDOUT = subprocess.STDOUT


class FakeStdin:
    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe
        self.eof = False
        self.written = bytearray()  # what the environment sent, for the tests to inspect

    def write(self, data: bytes) -> None:
        assert isinstance(data, bytes | bytearray)
        self.written += data
        self._pipe.write(data)

    def drain(self) -> None:
        if not self.eof:
            self._pipe.flush()

    def write_eof(self) -> None:
        self.eof = True
        self._pipe.close()


class FakeStdout:
    """Iterating yields the bytes as they come; ``close`` stops the iteration at the next chunk
    (the pipe itself is closed by the iterating thread, so its descriptor is never reused under
    a reader)."""

    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe
        self.closed = False

    def __iter__(self):
        try:
            while not self.closed:
                data = self._pipe.read1(1 << 16)
                if not data:
                    return
                yield data
        finally:
            self._pipe.close()

    def close(self) -> None:
        self.closed = True


class FakeProcess:
    def __init__(self, argv: tuple[str, ...], new_session: bool, sandbox: FakeSandbox) -> None:
        self.popen = subprocess.Popen(
            list(argv),
            env={**os.environ, "FAKE_MODAL_SANDBOX": sandbox.object_id, "TMPDIR": sandbox.tmp},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=new_session,
        )
        self.stdin = FakeStdin(self.popen.stdin)
        self.stdout = FakeStdout(self.popen.stdout)

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self) -> int:
        return self.popen.wait()

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode


class FakeSandbox:
    created: list[dict[str, Any]] = []
    by_name: dict[str, FakeSandbox] = {}
    new_session = True  # whether each exec is a session leader (as docker exec and sshd make it)

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.kwargs = kwargs
        # unique beyond this process: terminate() kills by this id, and other test runs on the
        # same machine make fake sandboxes too
        self.object_id = f"sb-fake-{secrets.token_hex(6)}-{len(FakeSandbox.created)}"
        self.tmp = tempfile.mkdtemp(prefix="fake-modal-tmp-")  # the sandbox's own /tmp
        self.execs: list[FakeProcess] = []
        self.exec_calls: list[dict[str, Any]] = []
        self.terminated = False

    @classmethod
    def create(cls, *args: str, **kwargs: Any) -> FakeSandbox:
        assert not args, "the environment starts no entry command"
        sandbox = cls(kwargs)
        cls.created.append(kwargs)
        if kwargs.get("name"):
            cls.by_name[kwargs["name"]] = sandbox
        return sandbox

    @classmethod
    def from_name(cls, app_name: str, name: str, **kwargs: Any) -> FakeSandbox:
        sandbox = cls.by_name.get(name)
        if sandbox is None or sandbox.terminated:
            raise NotFoundError(f"no sandbox {name!r} in app {app_name!r}")
        return sandbox

    def exec(self, *argv: str, text: bool = True, stderr: Any = None, **kwargs: Any) -> Any:
        if self.terminated:
            raise RuntimeError("sandbox terminated")
        assert text is False, "the environment reads bytes"
        assert stderr is StreamType.DEVNULL
        self.exec_calls.append({"argv": argv, **kwargs})
        process = FakeProcess(argv, self.new_session, self)
        self.execs.append(process)
        return process

    def terminate(self) -> None:
        """Like the end of a container: every process started in the sandbox dies."""
        self.terminated = True
        tag = f"FAKE_MODAL_SANDBOX={self.object_id}\0".encode()
        for _ in range(2):
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/environ", "rb") as handle:
                        if tag in handle.read():
                            os.kill(int(entry), signal.SIGKILL)
                except OSError:
                    pass
        for process in self.execs:
            process.popen.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


class FakeApp:
    looked_up: list[tuple[str, dict[str, Any]]] = []

    def __init__(self, name: str) -> None:
        self.name = name

    @classmethod
    def lookup(cls, name: str, **kwargs: Any) -> FakeApp:
        cls.looked_up.append((name, kwargs))
        return cls(name)


class FakeImage:
    def __init__(self, tag: str) -> None:
        self.tag = tag

    @classmethod
    def from_registry(cls, tag: str, **kwargs: Any) -> FakeImage:
        return cls(tag)


def build_fake_modal() -> types.ModuleType:
    modal = types.ModuleType("modal")
    modal.__version__ = "0.0-fake"
    modal.App = FakeApp
    modal.Image = FakeImage
    modal.Sandbox = FakeSandbox
    modal.stream_type = types.ModuleType("modal.stream_type")
    modal.stream_type.StreamType = StreamType
    modal.exception = types.ModuleType("modal.exception")
    modal.exception.NotFoundError = NotFoundError
    modal.exception.AuthError = AuthError
    return modal


@pytest.fixture
def fake_modal(monkeypatch):
    """The fake ``modal`` module in ``sys.modules``, with (fake) credentials set."""
    FakeSandbox.created = []
    FakeSandbox.by_name = {}
    FakeApp.looked_up = []
    module = build_fake_modal()
    monkeypatch.setitem(sys.modules, "modal", module)
    monkeypatch.setitem(sys.modules, "modal.stream_type", module.stream_type)
    monkeypatch.setitem(sys.modules, "modal.exception", module.exception)
    monkeypatch.setenv("MODAL_TOKEN_ID", "ak-fake")
    monkeypatch.setenv("MODAL_TOKEN_SECRET", "as-fake")
    return module
