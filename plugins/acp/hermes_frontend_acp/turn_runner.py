"""One connection's turns: ``session/prompt`` in protocol version 1 (answered when the turn
ends) and 2 (acknowledged, then told by ``state_update``), the slash commands run in place of a
turn, and what follows a turn."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Mapping
from typing import Any

from acp import RequestError
from acp.interfaces import Client
from acp.schema import AvailableCommandsUpdate, PromptResponse, SessionInfoUpdate

from hermes_hookspecs import AgentTask, CommandContext, SlashCommand

from . import client_mcp, commands, editor_files, protocol_v2
from .listing import SessionCatalog
from .permissions import approver
from .prompt import user_message
from .session_state import OpenSession
from .settings import Settings
from .turn_stream import TurnStream
from .turns import buffer_reader, buffer_writer, prompt_response, run_held, trace_context
from .updates import message_chunk

log = logging.getLogger("hermes.acp")


class Turns:
    """The turns of a connection's sessions (a part of :class:`~.server.HermesAgent`)."""

    context: CommandContext
    settings: Settings
    catalog: SessionCatalog
    slash: dict[str, tuple[SlashCommand, str]]
    upserts: protocol_v2.Upserts | None
    accepted: dict[str, asyncio.Event]
    sessions: dict[str, OpenSession]
    reads_buffers: bool
    writes_files: bool

    def _conn(self) -> Client:
        raise NotImplementedError

    async def _send(self, session_id: str, update: Any) -> None:
        raise NotImplementedError

    def _session(self, session_id: str) -> OpenSession:
        raise NotImplementedError

    def _signed_in(self) -> None:
        raise NotImplementedError

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        """Run one turn of the session, streaming its progress as updates: answered when it
        ends (version 1), or once accepted, its end then told by a ``state_update``
        (version 2)."""
        session = self._session(session_id)
        if session.busy or session_id in self.accepted:
            raise RequestError.invalid_request({"details": "a turn of this session is under way"})
        self._signed_in()
        message = user_message(prompt)
        session.cancel.clear()
        if self.upserts is None:
            return await self._turn(session, message, kwargs)
        self.accepted[session_id] = asyncio.Event()
        session.turn = asyncio.ensure_future(self._turn_v2(session, prompt, message, kwargs))
        return {}

    def prompt_answered(self, session_id: str) -> None:
        """The answer to a ``session/prompt`` of ``session_id`` was sent."""
        event = self.accepted.get(session_id)
        if event is not None:
            event.set()

    async def _turn_v2(
        self, session: OpenSession, blocks: list[Any], message: Any, meta: Mapping[str, Any]
    ) -> None:
        """A version 2 turn: the user message and ``running`` once the prompt's acceptance is
        sent, the turn, then ``idle`` with its stop reason."""
        accepted = self.accepted[session.id]
        try:
            await asyncio.wait_for(accepted.wait(), 10)
        except TimeoutError:  # pragma: no cover - the SDK sends the answer at once
            pass
        finally:
            self.accepted.pop(session.id, None)
        await self._send(session.id, protocol_v2.user_message(blocks))
        await self._send(session.id, protocol_v2.state("running"))
        reason: str = "end_turn"
        try:
            reason = (await self._turn(session, message, meta)).stop_reason
        except RequestError as exc:
            details = (exc.data or {}).get("details") if isinstance(exc.data, dict) else None
            await self._send(session.id, message_chunk(f"hermes: {details or exc}\n"))
            reason = "_error"
        except Exception as exc:  # the client went away; the session goes idle
            log.warning("a turn of %s failed: %s", session.id, exc)
            reason = "_error"
        try:
            await self._send(session.id, protocol_v2.state("idle", reason))
        except Exception as exc:  # pragma: no cover - the client went away meanwhile
            log.info("the end of a turn could not be sent: %s", exc)

    async def _turn(
        self, session: OpenSession, message: Any, kwargs: Mapping[str, Any]
    ) -> PromptResponse:
        """Run one turn of ``session`` (its ``message`` prepared): the updates, then the
        answer a version 1 prompt ends with."""
        loop = asyncio.get_running_loop()
        stream = TurnStream(self._send, session.id, session.cwd, loop)
        command = commands.command_of(message.text, self.slash)
        if command is not None:
            message.discard()
            return await self._run_command(session, command, stream)
        task = AgentTask(
            prompt=message.text,
            images=message.images,
            session_id=session.id,
            source="acp",
            model=session.model if session.model != self.settings.model else None,
            cancel_event=session.cancel,
            on_text_delta=stream.text,
            on_event=stream.event,
            approval=approver(
                session,
                stream.updates,
                loop,
                self._asker(session.id),
                stream.flush,
                self.settings.permission_timeout,
            ),
            config_overrides=self.settings.overrides(session),
            exclude_toolsets=["clarify"],
            only_toolsets=self.settings.toolsets,
            trace_context=trace_context(dict(kwargs)),
        )
        runner = self.context.agent_runner()
        if self.reads_buffers or (self.writes_files and self.settings.local):
            reader = buffer_reader(self._conn(), loop) if self.reads_buffers else None
            writes = self.writes_files and self.settings.local
            writer = buffer_writer(self._conn(), loop) if writes else None
            editor_files.open_session(session.id, session.cwd, reader, writer)
        held = functools.partial(self._run_turn, session, runner, task, stream)
        session.turn = asyncio.ensure_future(loop.run_in_executor(None, held))
        try:
            outcome = await asyncio.shield(session.turn)
        finally:
            message.discard()
            editor_files.close_session(session.id)
        await stream.close()
        session.count(dataclasses.asdict(outcome.usage))
        await self._after_turn(session)
        if outcome.status == "error" and not session.cancel.is_set():
            raise RequestError.internal_error({"details": outcome.error or "the turn failed"})
        return prompt_response(outcome, cancelled=session.cancel.is_set())

    def _run_turn(
        self, session: OpenSession, runner: Any, task: AgentTask, stream: TurnStream
    ) -> Any:
        """Start the client's MCP servers of the session at its first turn, then run ``task``
        with their tools (in the turn's worker thread)."""
        if session.mcp_tools is None:
            config = commands.session_config(self.context.config, session.cwd)
            tools, problems = client_mcp.start_tools(
                session.mcp_servers, config, self.settings.mcp_sandbox
            )
            session.mcp_tools = tools
            for problem in problems:
                log.warning("the client's MCP server %s", problem)
                stream.thought(f"MCP server {problem}\n")
        if session.mcp_tools:
            task = dataclasses.replace(task, extra_tools=tuple(session.mcp_tools))
        return run_held(runner, task, self.catalog.store, stream.thought)

    def _asker(self, session_id: str) -> Any:
        """``session/request_permission`` (version 2: with ``requires_action`` around it)."""
        ask = self._conn().request_permission
        if self.upserts is None:
            return ask
        return protocol_v2.asking(self._send, session_id, ask)

    async def _run_command(
        self, session: OpenSession, command: tuple[str, str], stream: TurnStream
    ) -> PromptResponse:
        """Run an offered slash command instead of a turn; its output is the answer."""
        name, arguments = command
        held = functools.partial(
            commands.run_command,
            name,
            arguments,
            context=self.context,
            plugins=self.slash,
            session_id=session.id,
            cwd=session.cwd,
            usage=dict(session.usage),
            echo=stream.text,
        )
        session.turn = asyncio.ensure_future(asyncio.get_running_loop().run_in_executor(None, held))
        try:
            await asyncio.shield(session.turn)
        finally:
            await stream.close()
        return PromptResponse(stop_reason="end_turn")

    async def announce_commands(self, session_id: str) -> None:
        """Tell the client the session's slash commands (after the session is open)."""
        if session_id not in self.sessions:
            return
        update = AvailableCommandsUpdate(
            session_update="available_commands_update",
            available_commands=commands.available(self.slash),
        )
        try:
            await self._send(session_id, update)
        except Exception as exc:  # the client went away meanwhile
            log.info("the commands could not be sent: %s", exc)

    async def _after_turn(self, session: OpenSession) -> None:
        """Keep the session's folder and choices with it; show a new title."""
        stored = self.catalog.get(session.id)
        if stored is None:  # deleted meanwhile
            return
        self.catalog.remember(session)
        if stored.title and stored.title != session.title:
            session.title = stored.title
            await self._send(
                session.id,
                SessionInfoUpdate(
                    session_update="session_info_update",
                    title=stored.title,
                    updated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                ),
            )
