"""A client for the tests: the SDK's own client connection to a real ``hermes acp``
subprocess, recording every update and answering permission requests as a test says."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

HERMES = shutil.which("hermes", path=os.path.dirname(sys.executable)) or "hermes"
PLUGINS = "acp,openai,local,terminal,file,approvals,todo"
"""The plugins the subprocess loads: the provider, the backend, the tools and the policy."""


def hermes_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``hermes`` subprocess using ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(HERMES_HOME=str(home), HERMES_PLUGINS=PLUGINS, OPENAI_API_KEY="test-key")
    env.update(extra)
    return env


def write_config(home: Path, base_url: str, extra: str = "", sandbox: str = "off") -> None:
    """A configuration with the fake model and the terminal, file and todo tools (no command
    sandbox unless ``sandbox`` names a profile)."""
    (home / "config.yaml").write_text(
        "model:\n  default: fake-model\n  provider: custom\n"
        f"  base_url: {base_url}\n"
        "toolsets: [terminal, file, todo]\n"
        f"terminal:\n  sandbox: {sandbox}\n" + extra,
        encoding="utf-8",
    )


def install_plugin(folder: Path, name: str, source: str) -> str:
    """A plugin module ``name`` found through its ``hermes`` entry point, as pip installs one,
    in ``folder`` (put it on ``PYTHONPATH``); returns ``folder``."""
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n",
        encoding="utf-8",
    )
    (info / "entry_points.txt").write_text(f"[hermes]\n{name} = {name}\n", encoding="utf-8")
    return str(folder)


Answer = Callable[[Any, list[str]], Any]
"""How the client answers a permission request: ``(tool_call, option_ids) -> option id``
(``None``: the request is cancelled; an exception: the client answers with an error)."""


@dataclass
class RecordingClient:
    """Records updates and permission requests; answers the latter with ``answer``."""

    answer: Answer = lambda call, options: "allow_once"  # noqa: E731
    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[tuple[Any, list[str]]] = field(default_factory=list)
    hold: asyncio.Event | None = None
    buffers: dict[str, str] = field(default_factory=dict)
    """Files open in the editor (path -> unsaved text): given to ``fs/read_text_file``."""
    written: list[tuple[str, str]] = field(default_factory=list)
    """``fs/write_text_file`` calls (path, text): kept in :attr:`buffers`, unsaved."""
    refuse_writes: bool = False
    commands: list[tuple[str, Any]] = field(default_factory=list)
    """The ``available_commands_update`` updates (kept apart: they come in their own time)."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """Record one update."""
        if update.session_update == "available_commands_update":
            self.commands.append((session_id, update))
            return
        self.updates.append((session_id, update))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        """Answer with ``answer``."""
        ids = [o.option_id for o in options]
        self.asked.append((tool_call, ids))
        if self.hold is not None:
            await self.hold.wait()
        chosen = self.answer(tool_call, ids)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )

    async def read_text_file(
        self,
        path: str,
        session_id: str,
        limit: int | None = None,
        line: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        """The editor's text of ``path``."""
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        """Take ``content`` into the editor's buffer of ``path`` (not saved to disk)."""
        if self.refuse_writes:
            raise RequestError.internal_error({"details": "the buffer is read-only"})
        self.written.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    def on_connect(self, conn: Any) -> None:
        """Nothing to remember."""

    def kinds(self, session_id: str | None = None) -> list[str]:
        """The ``sessionUpdate`` of each update, in order."""
        return [u.session_update for s, u in self.updates if session_id in (None, s)]

    def text(self, kind: str = "agent_message_chunk") -> str:
        """The text of every update of ``kind``, joined."""
        return "".join(u.content.text for _s, u in self.updates if u.session_update == kind)


@asynccontextmanager
async def connect(
    home: Path,
    client: RecordingClient,
    cwd: Path | None = None,
    observers: list[Any] | None = None,
    reads_buffers: bool = False,
    writes_files: bool = False,
    **env: str,
) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    """A connection to a fresh ``hermes acp``, initialized; every frame hermes writes is
    checked against the protocol's schema when the block ends."""
    from acp.connection import StreamDirection
    from frames import SchemaCheck

    sent: list[dict[str, Any]] = []
    received: list[dict[str, Any]] = []

    def record(event: Any) -> None:
        into = received if event.direction is StreamDirection.INCOMING else sent
        into.append(event.message)

    with open(home / "acp-stderr.log", "ab") as stderr:
        async with spawn_agent_process(
            client,
            HERMES,
            "acp",
            env=hermes_env(home, **env),
            cwd=str(cwd or home),
            transport_kwargs={"stderr": stderr},
            observers=[record, *(observers or [])],
        ) as (conn, process):
            capabilities = ClientCapabilities(
                fs=FileSystemCapabilities(
                    read_text_file=reads_buffers, write_text_file=writes_files
                )
            )
            await asyncio.wait_for(
                conn.initialize(protocol_version=1, client_capabilities=capabilities), 30
            )
            yield conn, process
    assert received, "no frame from hermes was seen"
    SchemaCheck().agent_frames(sent, received)


def run(coroutine: Any, timeout: float = 60) -> Any:
    """Run ``coroutine`` to the end (the tests are plain functions)."""
    return asyncio.run(asyncio.wait_for(coroutine, timeout))
