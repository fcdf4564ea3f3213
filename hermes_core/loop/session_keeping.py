"""What an agent keeps of its session in the store: opening it (a new one, or the stored one
resumed with its prompt and messages, calls a killed process left unanswered answered), the
system prompt built once per session, and the records a turn leaves when it ends (its usage,
the key rotations and fallbacks it made)."""

from __future__ import annotations

import datetime as _dt
import os
import time
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import HermesError, PromptContext, SessionInfo

from ..context.prompt import collect_layers, join_layers
from . import transcript
from .tool_calls import dangling_answers
from .turn import Turn

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["build_system_prompt", "record_turn", "start_session", "stored_messages"]


def start_session(agent: Agent) -> None:
    """Open ``agent``'s session once: resume the stored one (its prompt replayed byte for byte,
    its messages, the calls a killed process left without a result answered), else record a new
    one; then tell the hooks and the context engine.

    :raises HermesError: the stored session belongs to another person.
    """
    if agent.session is not None:
        return
    existing = agent.session_store.get_session(agent.session_id)
    if existing is not None and agent.person is not None and existing.person != agent.person:
        raise HermesError(f"session {agent.session_id!r} belongs to someone else")
    if existing is not None:  # resuming: replay the stored prompt and messages
        agent.session = existing
        agent.system_prompt = existing.system_prompt
        agent.messages = stored_messages(agent)
        for answer in dangling_answers(agent.messages):
            agent._append(answer)
    else:
        agent.session = SessionInfo(
            id=agent.session_id,
            source=agent.platform,
            model=agent.model,
            provider=agent.provider_name,
            started_at=time.time(),
            person=agent.person,
        )
        agent._store("create_session", agent.session)
    agent._writes.flush()  # stored before the hooks hear of it
    agent.approvals.reset()
    agent.plugins.call_each("hermes_session_start", session=agent.session)
    if agent.engine is not None:
        agent.engine.on_session_start(agent.session_id)


def stored_messages(agent: Agent) -> list[dict[str, Any]]:
    """The stored messages of ``agent``'s session, their text encodable: a session saved before
    text was cleaned where it entered may hold lone surrogates. A store that can say which
    messages need it (``get_clean_messages``) spares the walk through every message."""
    clean = getattr(agent.session_store, "get_clean_messages", None)
    if clean is not None:
        messages: list[dict[str, Any]] = clean(agent.session_id)
        return messages
    stored = agent.session_store.get_messages(agent.session_id)
    return [transcript.clean_value(m) for m in stored]


def build_system_prompt(agent: Agent, system_message: str | None) -> None:
    """Build ``agent``'s system prompt from the prompt layers (the tool catalogue after them,
    fixed for the session like the tools) and store it with the session."""
    context = PromptContext(
        model=agent.model,
        provider=agent.provider_name,
        platform=agent.platform,
        system_message=system_message,
        tool_names=agent.toolbox.names,
        toolsets=agent.toolbox.toolsets,
        hermes_home=agent.hermes_home,
        cwd=os.getcwd(),
        session_id=agent.session_id,
        date=_dt.date.today().isoformat(),
        config=agent.tool_contexts.config,
        person=agent.person,
    )
    agent.prompt_layers = collect_layers(agent.plugins, context)
    agent.system_prompt = join_layers(agent.prompt_layers) or None
    if agent.bridge is not None:
        catalogue = agent.accounting.catalogue_text = agent.bridge.prompt_text()
        agent.system_prompt = (
            f"{agent.system_prompt}\n\n{catalogue}" if agent.system_prompt else catalogue
        )
    if agent.session is not None:
        agent.session.system_prompt = agent.system_prompt
        agent.session.metadata["system_message"] = system_message
        agent._store(
            "update_session",
            agent.session.id,
            system_prompt=agent.system_prompt,
            system_message=system_message,
        )


def record_turn(agent: Agent, turn: Turn, rotations_before: int, switches_before: int) -> None:
    """What the ended ``turn`` leaves in the agent and its session: its usage and cost, the key
    rotations (each cost a full-price prompt read) and the fallbacks it made; written with the
    turn's last step, in one transaction."""
    agent.usage.add(turn.usage)
    agent.budget.finish_turn(turn.cost_usd)
    if turn.cost_usd is not None:
        agent.cost_usd += turn.cost_usd
    session = agent.session
    counted = turn.api_calls or turn.cost_usd is not None or turn.usage.input_tokens
    if hasattr(agent.session_store, "add_usage") and session is not None and counted:
        agent._store("add_usage", session.id, turn.usage.as_dict(), turn.cost_usd)
    rotated = agent.connection.rotations - rotations_before
    if rotated and session is not None:
        total = int(session.metadata.get("key_rotations") or 0) + rotated
        session.metadata["key_rotations"] = total
        agent._store("update_session", session.id, key_rotations=total)
    if len(agent.connection.switches) > switches_before and session is not None:
        agent._store("update_session", session.id, fallbacks=list(agent.connection.switches))
    agent._writes.flush()
