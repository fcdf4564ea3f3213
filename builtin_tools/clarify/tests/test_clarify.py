"""The clarify toolset, tested through its real entry point with the hermes test kit."""

from __future__ import annotations

import threading
import time

from hermes_core.testing import load_plugin, make_agent, text, tool_call, tool_calls


def test_loads_through_its_entry_point():
    record = load_plugin("clarify")
    assert "hermes_register_toolsets" in record.hooks


def test_the_answer_reaches_the_model():
    asked = []

    def answer(question, choices):
        asked.append((question, choices))
        return "blue"

    agent = make_agent(
        tool_call("clarify", {"question": "Which colour?", "choices": ["red", "blue"]}),
        text("Blue it is."),
        plugins=["clarify"],
        clarify_callback=answer,
    )
    assert agent.chat("paint it") == "Blue it is."
    assert asked == [("Which colour?", ["red", "blue"])]
    tool_message = agent.messages[2]
    assert tool_message["content"] == "The user answered: blue"


def test_without_a_user_the_model_is_told_to_proceed():
    agent = make_agent(
        tool_call("clarify", {"question": "Which colour?"}), text("ok"), plugins=["clarify"]
    )
    agent.chat("paint it")
    assert "no user is available" in agent.messages[2]["content"]


def test_two_questions_in_one_batch_are_asked_one_at_a_time():
    active = []
    overlap = threading.Event()

    def answer(question, choices):
        active.append(question)
        if len(active) > 1:
            overlap.set()
        time.sleep(0.05)
        active.remove(question)
        return "yes"

    agent = make_agent(
        tool_calls(("clarify", {"question": "a?"}), ("clarify", {"question": "b?"})),
        text("done"),
        plugins=["clarify"],
        clarify_callback=answer,
    )
    agent.chat("go")
    assert not overlap.is_set()
