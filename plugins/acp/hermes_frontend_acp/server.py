"""The ACP agent: protocol v1 requests answered with hermes's runner and session store."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    AuthenticateResponse,
    AvailableCommandsUpdate,
    CloseSessionResponse,
    CurrentModeUpdate,
    ForkSessionResponse,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SessionInfoUpdate,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from hermes_hookspecs import AgentTask, CommandContext

from . import client_mcp, commands, editor_files
from .checkpoints import CHECKPOINT_METHODS, checkpoints_command
from .handshake import SETUP_METHOD, initialize_result
from .listing import SessionCatalog
from .permissions import approver
from .prompt import user_message
from .replay import replay
from .session_state import OpenSession, new_session_id
from .settings import Settings
from .turn_stream import TurnStream
from .turns import buffer_reader, buffer_writer, prompt_response, run_held, trace_context

log = logging.getLogger("hermes.acp")


class HermesAgent:
    """One connection's ACP agent: the sessions an editor has open, each a hermes session."""

    def __init__(self, context: CommandContext, settings: Settings) -> None:
        self.context = context
        self.settings = settings
        self.catalog = SessionCatalog(context.session_store())
        self.sessions: dict[str, OpenSession] = {}
        self.client: Client | None = None
        self.reads_buffers = False
        """The client offered ``fs/read_text_file``: file reads see its unsaved buffers."""
        self.writes_files = False
        """The client offered ``fs/write_text_file``: file tools write through it."""
        self.logged_out = False
        """``logout`` was called: nothing runs until ``authenticate`` again."""
        self.slash = commands.plugin_commands(context)
        """The plugins' slash commands, offered in every session."""

    def remember_client(self, capabilities: Any) -> None:
        """Note what the client offers (``clientCapabilities`` of ``initialize``)."""
        if hasattr(capabilities, "model_dump"):
            capabilities = capabilities.model_dump(by_alias=True)
        fs = capabilities.get("fs") if isinstance(capabilities, Mapping) else None
        self.reads_buffers = isinstance(fs, Mapping) and fs.get("readTextFile") is True
        self.writes_files = isinstance(fs, Mapping) and fs.get("writeTextFile") is True

    def on_connect(self, conn: Client) -> None:
        """Remember the client side of the connection (for updates and questions)."""
        self.client = conn

    def _conn(self) -> Client:
        if self.client is None:  # pragma: no cover - the SDK connects before any request
            raise RequestError.internal_error({"details": "not connected"})
        return self.client

    # --- initialize and authentication ------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """Agree on protocol version 1 and say what hermes offers (the answer the handshake
        gives before the SDK has loaded, when the client's first frame is ``initialize``)."""
        self.remember_client(client_capabilities)
        who = getattr(client_info, "name", None) or "an unnamed client"
        log.info("initialize from %s (protocol %s)", who, protocol_version)
        return InitializeResponse.model_validate(initialize_result(protocol_version))

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """After ``hermes setup`` ran in the editor's terminal: ready when a model is set."""
        if method_id != SETUP_METHOD:
            raise RequestError.invalid_params({"details": f"unknown auth method {method_id!r}"})
        problem = self.settings.model_problem()
        if problem:
            raise RequestError.auth_required({"details": problem})
        self.logged_out = False
        return AuthenticateResponse()

    async def logout(self) -> dict[str, Any]:
        """End this connection's use of hermes's credentials: its sessions are closed and
        nothing runs until ``authenticate`` again. The credentials themselves stay where
        ``hermes setup`` put them (the chat and other editors use them too)."""
        for session_id in list(self.sessions):
            await self.close_session(session_id)
        self.logged_out = True
        return {}

    def _signed_in(self) -> None:
        if self.logged_out:
            raise RequestError.auth_required(
                {"details": "logged out on this connection: authenticate again (hermes-setup)"}
            )

    # --- sessions -------------------------------------------------------------------------

    def _open(
        self, session_id: str, cwd: str, mcp_servers: Sequence[Any] | None = None
    ) -> OpenSession:
        self._signed_in()
        problem = self.settings.workspace_problem(cwd)
        if problem:
            raise RequestError.invalid_params({"details": problem})
        session = OpenSession(id=session_id, cwd=cwd, model=self.settings.model)
        session.mcp_servers = list(mcp_servers or ())
        self.sessions[session_id] = session
        return session

    def _session(self, session_id: str) -> OpenSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.resource_not_found(session_id)
        return session

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        """A new hermes session, stored with its first turn."""
        session = self._open(new_session_id(), cwd, mcp_servers)
        try:
            self.catalog.create(session)
        except Exception as exc:  # the store refused: no session, said in one line
            self.sessions.pop(session.id, None)
            raise RequestError.internal_error({"details": f"session store: {exc}"}) from None
        return NewSessionResponse(
            session_id=session.id,
            modes=session.modes(),
            config_options=session.config_options(self.settings.models),
        )

    def _reopen(self, session_id: str, cwd: str, mcp_servers: Sequence[Any] | None) -> OpenSession:
        stored = self.catalog.get(session_id)
        if stored is None:
            raise RequestError.resource_not_found(session_id)
        old = self.sessions.get(session_id)
        if old is not None and old.busy:
            raise RequestError.invalid_request({"details": "a turn of this session is under way"})
        session = self._open(session_id, cwd, mcp_servers)
        session.restore_choices(stored.metadata, self.settings.models)
        session.title = stored.title
        return session

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """Open a stored session and show its history again as updates."""
        session = self._reopen(session_id, cwd, mcp_servers)
        conn = self._conn()
        for update in replay(self.catalog.messages(session_id), cwd):
            await conn.session_update(session_id, update)
        return LoadSessionResponse(
            modes=session.modes(), config_options=session.config_options(self.settings.models)
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        """Open a stored session without showing its history again."""
        session = self._reopen(session_id, cwd, mcp_servers)
        return ResumeSessionResponse(
            modes=session.modes(), config_options=session.config_options(self.settings.models)
        )

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        """Not offered (not advertised): forking is a draft of the protocol."""
        raise RequestError.method_not_found("session/fork")

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The stored sessions, newest first, a page at a time."""
        try:
            sessions, next_cursor = self.catalog.page(cwd, cursor)
        except ValueError as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None
        return ListSessionsResponse(sessions=sessions, next_cursor=next_cursor)

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """Stop the session's turn, if any, and forget it on this connection."""
        session = self._session(session_id)
        session.cancel.set()
        if session.turn is not None:
            await asyncio.gather(session.turn, return_exceptions=True)
        self.sessions.pop(session_id, None)
        return CloseSessionResponse()

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        """Close the session and delete it from the store."""
        if session_id in self.sessions:
            await self.close_session(session_id)
        try:
            found = self.catalog.delete(session_id)
        except ValueError as exc:
            raise RequestError.invalid_request({"details": str(exc)}) from None
        if not found:
            raise RequestError.resource_not_found(session_id)
        return {}

    # --- modes and options ----------------------------------------------------------------

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        """Switch how the session's approval requests are answered."""
        session = self._session(session_id)
        self._choose(session, "mode", mode_id)
        await self._conn().session_update(
            session_id,
            CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id),
        )
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """Change the session's mode, model or reasoning effort."""
        session = self._session(session_id)
        self._choose(session, config_id, value)
        options = session.config_options(self.settings.models)
        if config_id == "mode":
            await self._conn().session_update(
                session_id,
                CurrentModeUpdate(
                    session_update="current_mode_update", current_mode_id=session.mode
                ),
            )
        return SetSessionConfigOptionResponse(config_options=options)

    def _choose(self, session: OpenSession, option: str, value: Any) -> None:
        try:
            session.choose(option, value, self.settings.models)
        except ValueError as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None
        self.catalog.remember(session)

    # --- turns ----------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        """Run one turn of the session, streaming its progress as updates."""
        session = self._session(session_id)
        if session.busy:
            raise RequestError.invalid_request({"details": "a turn of this session is under way"})
        self._signed_in()
        message = user_message(prompt)
        session.cancel.clear()
        loop = asyncio.get_running_loop()
        stream = TurnStream(self._conn(), session.id, session.cwd, loop)
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
                self._conn().request_permission,
                stream.flush,
                self.settings.permission_timeout,
            ),
            config_overrides=self.settings.overrides(session),
            exclude_toolsets=["clarify"],
            only_toolsets=self.settings.toolsets,
            trace_context=trace_context(kwargs),
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
            await self._conn().session_update(session_id, update)
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
            await self._conn().session_update(
                session.id,
                SessionInfoUpdate(
                    session_update="session_info_update",
                    title=stored.title,
                    updated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                ),
            )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Interrupt the session's turn: it ends with ``cancelled`` and no partial history."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel.set()

    def cancel_request(self, params: Mapping[str, Any] | None, prompts: Mapping[Any, str]) -> None:
        """``$/cancel_request``: cancelling a ``session/prompt`` request cancels its turn."""
        request_id = (params or {}).get("requestId")
        session_id = prompts.get(request_id)
        if session_id is not None and session_id in self.sessions:
            self.sessions[session_id].cancel.set()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``_hermes/checkpoints/list`` and ``_hermes/checkpoints/restore`` (a dry run unless
        ``dryRun`` is false): the checkpoints of a session's folder, when the checkpoints
        plugin is installed."""
        if method not in CHECKPOINT_METHODS:
            raise RequestError.method_not_found(f"_{method}")
        session = self._session(str(params.get("sessionId") or ""))
        if method == "hermes/checkpoints/list":
            argv = ["list"]
        else:
            checkpoint = params.get("checkpoint")
            if not isinstance(checkpoint, str | int) or isinstance(checkpoint, bool):
                raise RequestError.invalid_params({"details": "checkpoint is required"})
            if session.busy:
                raise RequestError.invalid_request(
                    {"details": "a turn of this session is under way: restore after it"}
                )
            argv = ["restore", str(checkpoint)]
            if params.get("dryRun", True) is not False:
                argv.append("--dry-run")
        return await checkpoints_command(argv, session.cwd)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are ignored."""
