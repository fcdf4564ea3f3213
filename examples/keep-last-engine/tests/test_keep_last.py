"""Tests of the example context engine that use only the hermes test kit."""

import pytest

from hermes_core.testing import (
    assert_request_valid,
    load_plugin,
    make_agent,
    text,
    tool_call,
    tool_calls,
)
from hermes_hookspecs import HermesError, Tool, Toolset, hookimpl

KEEP_LAST = {"context": {"engine": "keep-last"}}
LOG = "2024-05-01 12:00:00 worker-3 ERROR queue timeout after 30s\n" * 80  # ~1,200 tokens


class Logs:
    """A toolset plugin, registered in-process, whose tool returns a long log."""

    @hookimpl
    def hermes_register_toolsets(self, register):
        register(
            Toolset(
                name="logs",
                tools=[
                    Tool(
                        name="read_log",
                        description="Read a log file",
                        parameters={
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        },
                        handler=lambda args, ctx: LOG,
                    )
                ],
            )
        )


def test_plugin_loads_through_its_entry_point():
    record = load_plugin("keep_last")
    assert record.dist == "hermes-example-keep-last"
    assert record.hooks == ["hermes_register_context_engines"]


def test_installing_it_does_not_make_it_active():
    assert make_agent(plugins=["keep_last"]).engine is None
    assert make_agent(plugins=["keep_last"], config=KEEP_LAST).engine.name == "keep-last"


def test_an_unknown_engine_name_lists_the_installed_ones():
    with pytest.raises(HermesError, match=r"unknown context engine 'keep_last'.*keep-last"):
        make_agent(plugins=["keep_last"], config={"context": {"engine": "keep_last"}})


def test_a_short_conversation_is_left_alone():
    agent = make_agent(text("hi"), text("still here"), plugins=["keep_last"], config=KEEP_LAST)
    first = agent.session_id
    agent.chat("hello")
    agent.chat("are you there?")
    assert agent.session_id == first
    assert len(agent.client.last_request.messages) == 3


def test_a_cut_tool_pair_is_repaired_and_the_request_survives():
    agent = make_agent(
        tool_call("read_log", {"name": "api"}),
        tool_calls(("read_log", {"name": "db"}), ("read_log", {"name": "cache"})),
        tool_call("read_log", {"name": "web"}),
        text("The queue times out on worker-3."),
        plugins=["keep_last", Logs()],
        config=KEEP_LAST,
    )
    first = agent.session_id
    assert agent.chat("Why are jobs failing?") == "The queue times out on worker-3."

    requests = agent.client.requests
    for request in requests:
        assert_request_valid(request)
    # The last request was cut to six messages, which began with a tool result whose call was
    # dropped: the host put the user's request back and removed the orphan result.
    last = requests[-1].messages
    assert last[0] == {"role": "user", "content": "Why are jobs failing?"}
    assert [m["role"] for m in last] == ["user", "assistant", "tool", "tool", "assistant", "tool"]
    assert "call_1" not in {m.get("tool_call_id") for m in last}

    # Each compression continued the conversation in a child session.
    store = agent.session_store
    lineage = []
    session = store.get_session(agent.session_id)
    while session is not None:
        lineage.append(session.id)
        session = session.parent_session_id and store.get_session(session.parent_session_id)
    assert lineage[-1] == first and len(lineage) >= 2
    assert store.get_session(first).end_reason == "compressed"


def test_compress_on_request():
    agent = make_agent(
        *[text(f"answer {i}") for i in range(5)], plugins=["keep_last"], config=KEEP_LAST
    )
    for i in range(5):
        agent.chat(f"question {i}")
    figures = agent.compress()
    assert figures["messages_before"] == 10 and figures["messages_after"] == 6
    assert agent.messages[0] == {"role": "user", "content": "question 2"}
    child = agent.session_store.get_session(agent.session_id)
    assert child.parent_session_id == figures["parent_session_id"]
