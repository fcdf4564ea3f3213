"""AgentTask.resume_unanswered: a turn repeated after the process running it died continues
from what the store recorded of it (its user message, its completed steps) instead of adding
the message again; any other turn is unaffected."""

from __future__ import annotations

from hermes_core.testing import ScriptedModel, make_runner
from hermes_hookspecs import AgentTask


def _session(tmp_path, model: ScriptedModel) -> tuple[object, str]:
    runner = make_runner(model=model, plugins=[], home=tmp_path, config={})
    first = runner.run(AgentTask(prompt="a"))
    assert first.status == "completed"
    return runner, first.session_id


def _roles(runner, session_id: str) -> list[tuple[str, object]]:
    return [(m["role"], m.get("content")) for m in runner.session_store.get_messages(session_id)]


def test_an_unanswered_turn_is_continued_without_its_message_again(tmp_path):
    model = ScriptedModel("A", "B")
    runner, sid = _session(tmp_path, model)
    runner.session_store.append_message(sid, {"role": "user", "content": "b"})  # then it died
    again = runner.run(AgentTask(prompt="b", session_id=sid, resume_unanswered=True))
    assert (again.status, again.text) == ("completed", "B")
    assert _roles(runner, sid) == [
        ("user", "a"),
        ("assistant", "A"),
        ("user", "b"),
        ("assistant", "B"),
    ]
    assert [m["content"] for m in model.requests[-1].messages if m["role"] == "user"] == ["a", "b"]


def test_a_recorded_tool_step_is_kept_and_not_asked_for_again(tmp_path):
    model = ScriptedModel("A", "done")
    runner, sid = _session(tmp_path, model)
    store = runner.session_store
    call = {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
    store.append_message(sid, {"role": "user", "content": "b"})
    store.append_message(sid, {"role": "assistant", "content": None, "tool_calls": [call]})
    store.append_message(sid, {"role": "tool", "tool_call_id": "call_1", "content": "echoed"})
    again = runner.run(AgentTask(prompt="b", session_id=sid, resume_unanswered=True))
    assert (again.status, again.text) == ("completed", "done")
    roles = [role for role, _ in _roles(runner, sid)]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    sent = model.requests[-1].messages
    assert [m["role"] for m in sent if m["role"] != "system"][-2:] == ["assistant", "tool"]


def test_a_different_or_answered_message_is_added_as_usual(tmp_path):
    model = ScriptedModel("A", "B", "C")
    runner, sid = _session(tmp_path, model)
    runner.session_store.append_message(sid, {"role": "user", "content": "lost"})
    runner.run(AgentTask(prompt="b", session_id=sid, resume_unanswered=True))
    contents = [c for _, c in _roles(runner, sid)]
    assert contents[2] == "lost" and contents[4:] == ["b", "B"]  # closed with a note, then b
    runner.run(AgentTask(prompt="b", session_id=sid, resume_unanswered=True))  # answered: anew
    assert [c for _, c in _roles(runner, sid)][-2:] == ["b", "C"]
