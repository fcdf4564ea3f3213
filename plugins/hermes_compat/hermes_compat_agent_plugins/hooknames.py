"""The Hermes agent's hook names, which of them mean something here, and why the others do not."""

from __future__ import annotations

HONOURED_HOOKS: dict[str, str] = {
    "pre_tool_call": "hermes_pre_tool_call (block, approve and modify directives)",
    "post_tool_call": "hermes_post_tool_call (observer)",
    "transform_tool_result": "hermes_post_tool_call (the first string replaces the result)",
    "transform_terminal_output": "hermes_post_tool_call of the terminal tool (replaces its output)",
    "pre_llm_call": "hermes_before_request (context appended to the turn's user message)",
    "post_llm_call": "hermes_after_response of the turn's final answer (observer)",
    "transform_llm_output": "hermes_after_response of the final answer (replaces its text)",
    "pre_api_request": "hermes_before_request (observer)",
    "post_api_request": "hermes_after_response (observer)",
    "on_session_start": "hermes_session_start",
    "on_session_end": "hermes_session_end",
    "on_session_finalize": "hermes_session_end",
    "pre_approval_request": "hermes_approve, when no plugin called before it decided (observer)",
    "subagent_start": "hermes_subagent_start",
    "subagent_stop": "hermes_subagent_stop",
}
"""Hermes agent hook -> the hook of this project it is called from."""

_REASONS: dict[str, str] = {
    "api_request_error": "no hook here reports a failed model request",
    "post_approval_response": "no hook here reports an approval decision",
    "on_stream_start": "no hook here sees the response stream",
    "on_stream_delta": "no hook here sees the response stream",
    "on_stream_end": "no hook here sees the response stream",
    "on_interim_message": "no hook here sees interim assistant messages",
    "on_session_reset": "hermes has no session reset (a new session is a new agent)",
    "pre_verify": "hermes has no verify gate",
    "transform_api_error_classification": "provider errors are classified by the providers",
    "pre_gateway_dispatch": "the hermes gateway does not call Hermes agent plugins",
    "gateway_platform_event": "the hermes gateway does not call Hermes agent plugins",
    "agent_loop_stopped": "no hook here reports an interrupted turn",
    "pre_command": "no hook here sees slash commands",
    "on_skill_lifecycle": "no hook here reports skill usage",
    "pre_transcription": "hermes has no speech-to-text",
    "pre_tts_synthesis": "hermes has no text-to-speech",
    "on_room_member_activity": "hermes has no group chat",
    "pre_auxiliary_call": "hermes makes no auxiliary model calls",
    "post_auxiliary_call": "hermes makes no auxiliary model calls",
}

_KANBAN = (
    "kanban_task_claimed",
    "kanban_task_completed",
    "kanban_task_blocked",
    "on_kanban_worker_spawned",
    "on_kanban_worker_exited",
    "on_kanban_worker_stale_claim",
    "on_kanban_task_updated",
    "on_kanban_dispatch_tick",
)

KNOWN_HOOKS: frozenset[str] = frozenset(HONOURED_HOOKS) | frozenset(_REASONS) | frozenset(_KANBAN)
"""Every hook name the Hermes agent accepts in ``ctx.register_hook``."""


def not_honoured_reason(hook: str) -> str:
    """Why ``hook`` is never called here."""
    if hook in _KANBAN:
        return "hermes has no kanban board"
    return _REASONS.get(hook, "no equivalent hook in hermes")
