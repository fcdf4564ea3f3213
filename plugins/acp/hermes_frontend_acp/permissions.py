"""hermes's approval requests as ACP ``session/request_permission``: the editor is one more
front end of the approval gate, and every doubt is a denial."""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp.schema import (
    AllowedOutcome,
    ContentToolCallContent,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
)

from hermes_hookspecs import ApprovalRequest

from .session_state import OpenSession
from .tools import kind_of
from .updates import TurnUpdates

log = logging.getLogger("hermes.acp")

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS = (
    "allow_once",
    "allow_always",
    "reject_once",
    "reject_always",
)

DECISIONS: dict[str, str] = {
    ALLOW_ONCE: "once",
    ALLOW_ALWAYS: "always",
    REJECT_ONCE: "deny",
    REJECT_ALWAYS: "deny",
}
"""The editor's answer (an option id) -> hermes's decision."""

Ask = Callable[[str, ToolCallUpdate, list[PermissionOption]], Awaitable[RequestPermissionResponse]]
"""Sends ``session/request_permission`` and returns the editor's answer."""

_ids = itertools.count(1)


def options_for(request: ApprovalRequest) -> list[PermissionOption]:
    """The choices offered for ``request``: a command run outside the sandbox may be allowed
    once only (never remembered)."""
    options = [PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once")]
    if not request.once_only:
        options.append(
            PermissionOption(option_id=ALLOW_ALWAYS, name="Always allow", kind="allow_always")
        )
    options.append(PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"))
    options.append(
        PermissionOption(
            option_id=REJECT_ALWAYS, name="Reject for this session", kind="reject_always"
        )
    )
    return options


def describe(request: ApprovalRequest) -> str:
    """What the person is asked to approve: the exact action, why, and what it may do."""
    lines = [
        f"hermes asks to run:\n\n    {request.action}\n",
        f"Why approval is needed: {request.reason}",
    ]
    if request.once_only:
        lines.append("This runs OUTSIDE the sandbox; it can be allowed for this one call only.")
    for key, value in sorted(request.details.items()):
        lines.append(f"{key}: {value}")
    return "\n".join(lines)


def tool_call_of(request: ApprovalRequest, updates: TurnUpdates) -> ToolCallUpdate:
    """The tool call the request is about (the one under way), described for the person."""
    found = updates.call_of(request.tool)
    call_id = found[0] if found else f"approval_{next(_ids)}"
    return ToolCallUpdate(
        tool_call_id=call_id,
        title=request.action if len(request.action) <= 200 else request.action[:199] + "…",
        kind=kind_of(request.tool),
        status="pending",
        content=[
            ContentToolCallContent(
                type="content", content=TextContentBlock(type="text", text=describe(request))
            )
        ],
        raw_input={"action": request.action, "reason": request.reason, "tool": request.tool},
    )


def decision_of(response: RequestPermissionResponse | None) -> str:
    """hermes's decision for the editor's answer; a cancelled or unknown answer is a denial."""
    outcome = response.outcome if response is not None else None
    if isinstance(outcome, AllowedOutcome):
        return DECISIONS.get(outcome.option_id, "deny")
    return "deny"


def approver(
    session: OpenSession,
    updates: TurnUpdates,
    loop: asyncio.AbstractEventLoop,
    ask: Ask,
    flush: Callable[[], Awaitable[None]],
    timeout: float,
) -> Callable[[ApprovalRequest], str | None]:
    """The approval callback of one turn (called from the turn's worker thread)."""

    async def question(request: ApprovalRequest) -> RequestPermissionResponse:
        await flush()  # the tool call shows before the question about it
        return await ask(session.id, tool_call_of(request, updates), options_for(request))

    def approve(request: ApprovalRequest) -> str | None:
        if session.mode == "never-ask" or session.cancel.is_set():
            return "deny"
        if request.cache_key in session.rejected:
            return "deny"
        if request.cache_key in session.allowed and not request.once_only:
            return "once"  # allowed always earlier in this session (each turn is a new agent)
        future = asyncio.run_coroutine_threadsafe(question(request), loop)
        try:
            response: Any = future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            log.warning("no answer to a permission request in %.0f s: denied", timeout)
            return "deny"
        except Exception as exc:  # a closed connection, an error answer: nobody approved
            log.warning("permission request failed (%s): denied", exc)
            return "deny"
        option = getattr(getattr(response, "outcome", None), "option_id", None)
        if option == REJECT_ALWAYS:
            session.rejected.add(request.cache_key)
        elif option == ALLOW_ALWAYS and not request.once_only:
            session.allowed.add(request.cache_key)
        decision = decision_of(response)
        if request.once_only and decision != "deny":
            return "once"
        return decision

    return approve
