"""The ACP agent: protocol v1 requests answered with hermes's runner and session store."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    AuthenticateResponse,
    CloseSessionResponse,
    CurrentModeUpdate,
    ForkSessionResponse,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    ResumeSessionResponse,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from hermes_hookspecs import CommandContext

from . import commands, protocol_v2
from .checkpoints import CHECKPOINT_METHODS, checkpoints_command
from .handshake import PROTOCOL_VERSION, SETUP_METHOD, initialize_result
from .listing import SessionCatalog
from .replay import replay
from .session_state import OpenSession, new_session_id
from .settings import Settings
from .turn_runner import Turns

log = logging.getLogger("hermes.acp")


class HermesAgent(Turns):
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
        self.version = PROTOCOL_VERSION
        """The protocol version agreed on ``initialize``."""
        self.upserts: protocol_v2.Upserts | None = None
        """Version 2 only: how updates become keyed upserts."""
        self.accepted: dict[str, asyncio.Event] = {}
        """Version 2: the prompts whose acceptance is not sent yet, by session."""
        self.logged_out = False
        """``logout`` was called: nothing runs until ``authenticate`` again."""
        self.slash = commands.plugin_commands(context)
        """The plugins' slash commands, offered in every session."""

    def remember_client(self, capabilities: Any, version: int = PROTOCOL_VERSION) -> None:
        """Note the protocol version agreed and what the client offers (``clientCapabilities``
        of ``initialize``; version 2 has no client file system)."""
        self.version = version
        self.upserts = protocol_v2.Upserts() if version >= protocol_v2.VERSION else None
        if hasattr(capabilities, "model_dump"):
            capabilities = capabilities.model_dump(by_alias=True)
        fs = capabilities.get("fs") if isinstance(capabilities, Mapping) else None
        fs = fs if isinstance(fs, Mapping) and self.upserts is None else {}
        self.reads_buffers = fs.get("readTextFile") is True
        self.writes_files = fs.get("writeTextFile") is True

    async def _send(self, session_id: str, update: Any) -> None:
        """One ``session/update``, in the connection's protocol version."""
        if self.upserts is None:
            await self._conn().session_update(session_id, update)
        else:
            await protocol_v2.sender(self._conn(), self.upserts)(session_id, update)

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
        result = initialize_result(protocol_version, self.settings.protocol_v2)
        self.remember_client(client_capabilities, int(result["protocolVersion"]))
        who = getattr(client_info, "name", None) or "an unnamed client"
        log.info("initialize from %s (protocol %s)", who, protocol_version)
        return InitializeResponse.model_validate(result)

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

    def _modes(self, session: OpenSession) -> Any:
        """The session's modes (version 1; version 2 has config options only)."""
        return session.modes() if self.upserts is None else None

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
            modes=self._modes(session),
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
        for update in replay(self.catalog.messages(session_id), cwd):
            await self._send(session_id, update)
        return LoadSessionResponse(
            modes=self._modes(session),
            config_options=session.config_options(self.settings.models),
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
            modes=self._modes(session),
            config_options=session.config_options(self.settings.models),
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
        await self._send(
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
            await self._send(
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
