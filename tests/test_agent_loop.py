"""The agent loop: turns, tools, ordering, bad model output, budget, interrupts, result shape."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from hermes_core.loop.agent import RESULT_KEYS, UNANSWERED_NOTE, AgentError
from hermes_core.testing import (
    Call,
    ScriptedModel,
    Turn,
    assert_request_valid,
    assert_valid_transcript,
    make_agent,
    text,
    tool_call,
    tool_calls,
    toolset_plugin,
    wait_until,
)
from hermes_hookspecs import (
    ProviderError,
    RateLimitError,
    Tool,
    ToolError,
    hookimpl,
)

OBJ = {"type": "object", "properties": {}}


def echo_tool(name="echo", sequential=False, delay=0.0, record=None):
    def handler(args, ctx):
        if record is not None:
            record.append(("start", name, time.monotonic()))
        time.sleep(delay)
        if record is not None:
            record.append(("end", name, time.monotonic()))
        return f"{name}:{args.get('x', '')}"

    return Tool(
        name=name,
        description=f"{name} tool",
        parameters={"type": "object", "properties": {"x": {"type": "string"}}},
        handler=handler,
        sequential=sequential,
    )


def test_text_answer_ends_the_turn_with_full_result_shape():
    agent = make_agent(text("hello there"))
    result = agent.run_conversation("hi")
    assert set(result) == RESULT_KEYS
    assert result["final_response"] == "hello there"
    assert result["completed"] and not result["interrupted"]
    assert result["exit_reason"] == "completed" and result["error"] is None
    assert result["api_calls"] == 1
    assert result["usage"]["input_tokens"] > 0
    assert [m["role"] for m in result["messages"]] == ["user", "assistant"]
    assert result["task_id"].startswith("task_") and result["session_id"]


def test_chat_returns_text_and_raises_on_failure():
    assert make_agent(text("yes")).chat("q") == "yes"
    agent = make_agent(ProviderError("boom"))
    with pytest.raises(AgentError, match="boom"):
        agent.chat("q")


def test_tool_call_then_answer_and_results_reach_the_model():
    agent = make_agent(
        tool_call("echo", {"x": "1"}), text("done"), plugins=[toolset_plugin(echo_tool())]
    )
    result = agent.run_conversation("go")
    assert result["final_response"] == "done" and result["api_calls"] == 2
    second = agent.client.requests[1]
    assert second.messages[-1]["role"] == "tool" and second.messages[-1]["content"] == "echo:1"
    assert_request_valid(second)


def test_results_are_appended_in_the_models_order_whatever_finishes_first():
    tools = [echo_tool("slow", delay=0.2), echo_tool("fast")]
    agent = make_agent(
        tool_calls(("slow", {"x": "a"}), ("fast", {"x": "b"})),
        text("ok"),
        plugins=[toolset_plugin(*tools)],
    )
    agent.chat("go")
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert results == ["slow:a", "fast:b"]


def test_several_calls_run_concurrently():
    record: list = []
    tools = [echo_tool("a", delay=0.2, record=record), echo_tool("b", delay=0.2, record=record)]
    agent = make_agent(
        tool_calls(("a", {}), ("b", {})), text("ok"), plugins=[toolset_plugin(*tools)]
    )
    agent.chat("go")
    starts = [t for kind, _, t in record if kind == "start"]
    ends = [t for kind, _, t in record if kind == "end"]
    assert max(starts) < min(ends), "the two calls did not overlap"


def test_a_sequential_tool_forces_one_call_at_a_time():
    record: list = []
    tools = [
        echo_tool("a", delay=0.05, record=record),
        echo_tool("ask", sequential=True, delay=0.05, record=record),
    ]
    agent = make_agent(
        tool_calls(("a", {}), ("ask", {})), text("ok"), plugins=[toolset_plugin(*tools)]
    )
    agent.chat("go")
    assert [kind for kind, _, _ in record] == ["start", "end", "start", "end"]


def test_async_handlers_work_across_turns_and_agents():
    async def handler(args, ctx):
        await asyncio.sleep(0.01)
        return {"loop": "persistent"}

    tool = Tool("aio", "async tool", OBJ, handler)
    for _ in range(2):  # a second agent reuses the same loop: no "event loop is closed"
        agent = make_agent(
            tool_call("aio"), tool_call("aio"), text("ok"), plugins=[toolset_plugin(tool)]
        )
        agent.chat("go")
        results = [m["content"] for m in agent.messages if m["role"] == "tool"]
        assert results == ['{"loop": "persistent"}'] * 2


@pytest.mark.parametrize(
    "call, expected",
    [
        (Call("echo", "{not json"), "are not valid JSON"),
        (Call("echo", "[1, 2]"), "must be a JSON object"),
        (Call("nope", {}), "unknown tool 'nope'. Available tools: echo"),
        (Call("echo", {"x": 5}), "invalid arguments for tool 'echo': $.x: expected string"),
    ],
)
def test_model_mistakes_go_back_as_tool_results(call, expected):
    agent = make_agent(Turn(calls=[call]), text("sorry"), plugins=[toolset_plugin(echo_tool())])
    result = agent.run_conversation("go")
    assert result["final_response"] == "sorry"
    tool_message = agent.messages[2]
    assert tool_message["role"] == "tool" and expected in tool_message["content"]
    assert_valid_transcript(agent.messages)


def test_handler_exceptions_are_reported_with_type_and_message():
    def boom(args, ctx):
        raise KeyError("missing thing")

    def clean(args, ctx):
        raise ToolError("file not found: a.txt")

    tools = [Tool("boom", "", OBJ, boom), Tool("clean", "", OBJ, clean)]
    agent = make_agent(
        tool_calls(("boom", {}), ("clean", {})), text("ok"), plugins=[toolset_plugin(*tools)]
    )
    agent.chat("go")
    contents = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert contents == [
        "Error: tool 'boom' raised KeyError: 'missing thing'",
        "Error: file not found: a.txt",
    ]


def test_three_invalid_steps_in_a_row_end_the_turn():
    agent = make_agent(
        *[tool_call("nope") for _ in range(5)], plugins=[toolset_plugin(echo_tool())]
    )
    result = agent.run_conversation("go")
    assert result["exit_reason"] == "invalid_tool_calls"
    assert "every tool call of the model was invalid, 3 steps in a row" in result["error"]
    assert result["api_calls"] == 3 and not result["completed"]
    assert_valid_transcript(agent.messages)


def test_a_valid_call_resets_the_invalid_streak():
    script = [
        tool_call("nope"),
        tool_call("nope"),
        tool_call("echo"),
        tool_call("nope"),
        tool_call("nope"),
        text("fine"),
    ]
    agent = make_agent(*script, plugins=[toolset_plugin(echo_tool())])
    assert agent.run_conversation("go")["exit_reason"] == "completed"


def test_budget_exhaustion_asks_for_a_summary_without_tools():
    agent = make_agent(
        *[tool_call("echo") for _ in range(3)],
        text("I echoed three times."),
        plugins=[toolset_plugin(echo_tool())],
        max_turns=3,
    )
    result = agent.run_conversation("go")
    assert result["final_response"] == "I echoed three times."
    assert result["exit_reason"] == "max_turns" and result["completed"]
    last = agent.client.last_request
    assert last.tools == []
    assert "no more tools can be called" in last.messages[-1]["content"]
    assert_request_valid(last)


def test_tool_schemas_are_sorted_and_byte_identical_between_calls():
    tools = [echo_tool(n) for n in ("zeta", "alpha", "mid")]
    agent = make_agent(
        tool_call("mid"), tool_call("alpha"), text("ok"), plugins=[toolset_plugin(*tools)]
    )
    agent.chat("go")
    import json

    dumps = [json.dumps(r.tools) for r in agent.client.requests]
    assert agent.client.requests[0].tool_names == ["alpha", "mid", "zeta"]
    assert len(set(dumps)) == 1


def test_internal_fields_never_reach_the_wire():
    agent = make_agent(
        Turn(text=None, reasoning="thinking hard", calls=[Call("echo")]),
        text("ok"),
        plugins=[toolset_plugin(echo_tool())],
    )
    agent.chat("go")
    assert agent.messages[1]["reasoning"] == "thinking hard"
    assert_request_valid(agent.client.last_request)
    assert "tool_name" not in agent.client.last_request.messages[-1]


def test_history_is_repaired_before_the_call():
    history = [
        {"role": "user", "content": "a"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "zzz", "content": "orphan"},
    ]
    agent = make_agent(text("ok"))
    agent.run_conversation("next", conversation_history=history)
    sent = agent.client.last_request.messages
    assert_request_valid(agent.client.last_request)
    assert not any(m.get("tool_call_id") == "zzz" for m in sent)
    assert any(m.get("tool_call_id") == "c1" for m in sent)


def test_streaming_deltas_and_reasoning_reach_callbacks():
    deltas, reasoning, generated = [], [], []
    agent = make_agent(
        Turn(text=None, reasoning="hmm", calls=[Call("echo")]),
        text("a streamed answer"),
        plugins=[toolset_plugin(echo_tool())],
        stream_delta_callback=deltas.append,
        reasoning_callback=reasoning.append,
        tool_gen_callback=generated.append,
    )
    agent.chat("go")
    assert "".join(deltas) == "a streamed answer"
    assert "hmm" in "".join(reasoning)
    assert generated == ["echo"]


def test_events_cover_tools_thinking_and_steps():
    events = []
    agent = make_agent(
        tool_call("echo", {"x": "1"}),
        text("ok"),
        plugins=[toolset_plugin(echo_tool())],
        event_sink=events.append,
    )
    agent.chat("go")
    names = [e.name for e in events]
    assert names.count("thinking") == 4 and names.count("step") == 2
    end = next(e for e in events if e.name == "tool_end")
    assert end.data["name"] == "echo" and end.data["duration"] >= 0 and not end.data["is_error"]


def test_a_failing_callback_does_not_stop_the_agent():
    def broken(*args):
        raise RuntimeError("display crashed")

    agent = make_agent(
        tool_call("echo"),
        text("ok"),
        plugins=[toolset_plugin(echo_tool())],
        tool_progress_callback=broken,
        step_callback=broken,
    )
    assert agent.chat("go") == "ok"


def test_long_results_are_capped_with_a_visible_marker():
    tool = Tool("big", "", OBJ, lambda a, c: "x" * 5000, max_result_chars=1000)
    agent = make_agent(tool_call("big"), text("ok"), plugins=[toolset_plugin(tool)])
    agent.chat("go")
    content = agent.messages[2]["content"]
    assert len(content) <= 1000 and "result truncated" in content and "5000" in content


def test_retryable_errors_are_retried_then_reported():
    agent = make_agent(
        RateLimitError("slow down"), text("ok"), config={"agent": {"retry_base_delay": 0.01}}
    )
    assert agent.chat("q") == "ok"
    agent = make_agent(
        *[RateLimitError("slow down")] * 3,
        config={"agent": {"retry_base_delay": 0.01, "api_max_retries": 2}},
    )
    result = agent.run_conversation("q")
    assert result["exit_reason"] == "provider_error" and "slow down" in result["error"]
    assert len(agent.client.requests) == 3
    assert [m["role"] for m in agent.messages] == ["user"]


def test_unexpected_client_bug_still_returns_the_result_shape():
    agent = make_agent(model=ScriptedModel(fn=lambda request: 1 / 0))
    result = agent.run_conversation("q")
    assert set(result) == RESULT_KEYS
    assert result["exit_reason"] == "error" and "ZeroDivisionError" in result["error"]


def test_interrupt_during_model_call_leaves_no_trace():
    agent = make_agent(text("too late", delay=5))
    result_box = {}
    worker = threading.Thread(target=lambda: result_box.update(r=agent.run_conversation("q")))
    worker.start()
    assert wait_until(lambda: len(agent.client.requests) == 1)
    agent.interrupt()
    worker.join(timeout=3)
    result = result_box["r"]
    assert result["interrupted"] and result["exit_reason"] == "interrupted"
    assert result["final_response"] is None
    assert [m["role"] for m in agent.messages] == ["user"]


def test_a_callers_cancel_event_interrupts_the_turn_and_interrupt_sets_it():
    agent = make_agent(text("too late", delay=5), "next", text("late again", delay=5))
    cancel = threading.Event()
    box = {}
    worker = threading.Thread(
        target=lambda: box.update(r=agent.run_conversation("q", cancel_event=cancel))
    )
    worker.start()
    assert wait_until(lambda: len(agent.client.requests) == 1)
    cancel.set()
    worker.join(timeout=3)
    assert box["r"]["exit_reason"] == "interrupted"
    assert [m["role"] for m in agent.messages] == ["user"]
    # the next turn has a fresh event of its own: the earlier interrupt does not apply
    assert agent.run_conversation("again")["final_response"] == "next"
    own = threading.Event()
    worker = threading.Thread(
        target=lambda: box.update(r=agent.run_conversation("q", cancel_event=own))
    )
    worker.start()
    assert wait_until(lambda: len(agent.client.requests) == 3)
    agent.interrupt()
    worker.join(timeout=3)
    assert own.is_set() and box["r"]["exit_reason"] == "interrupted"


def test_interrupt_during_tools_answers_every_call():
    started = threading.Event()

    def slow(args, ctx):
        started.set()
        ctx.cancel_event.wait(5)
        ctx.check_cancelled()
        return "finished"

    tools = [Tool("slow", "", OBJ, slow), Tool("quick", "", OBJ, lambda a, c: "quick done")]
    agent = make_agent(
        tool_calls(("quick", {}), ("slow", {}), ("slow", {})),
        plugins=[toolset_plugin(*tools)],
        config={"agent": {"tool_concurrency": 2}},
    )
    box = {}
    worker = threading.Thread(target=lambda: box.update(r=agent.run_conversation("q")))
    worker.start()
    assert started.wait(3)
    agent.interrupt()
    worker.join(timeout=3)
    result = box["r"]
    assert result["interrupted"]
    tool_messages = [m for m in agent.messages if m["role"] == "tool"]
    assert len(tool_messages) == 3
    assert all("interrupted" in m["content"] for m in tool_messages[1:])
    assert_valid_transcript(agent.messages)
    # the next turn works and sends a valid transcript
    agent.client.add(text("back"))
    assert agent.chat("again") == "back"
    assert_request_valid(agent.client.last_request)


def test_tool_context_gives_ids_config_the_store_and_emit():
    seen = {}

    def handler(args, ctx):
        seen.update(
            task=ctx.task_id,
            session=ctx.session_id,
            call=ctx.call_id,
            tool=ctx.tool_name,
            turns=ctx.config["agent"]["max_turns"],
            store=ctx.session_store,
        )
        ctx.emit("status", text="working")
        return "ok"

    statuses = []
    agent = make_agent(
        tool_call("ctx", id="call_x"),
        text("done"),
        plugins=[toolset_plugin(Tool("ctx", "", OBJ, handler))],
        status_callback=statuses.append,
        max_turns=7,
    )
    result = agent.run_conversation("go", task_id="task_1")
    assert seen["task"] == "task_1" and seen["session"] == result["session_id"]
    assert seen["call"] == "call_x" and seen["tool"] == "ctx" and seen["turns"] == 7
    assert seen["store"] is agent.session_store
    assert "working" in statuses


def test_every_completed_step_is_persisted_before_the_next():
    snapshots = []

    def handler(args, ctx):
        stored = ctx.session_store.get_messages(ctx.session_id)
        snapshots.append([m["role"] for m in stored])
        return "ok"

    agent = make_agent(
        tool_call("peek"), text("done"), plugins=[toolset_plugin(Tool("peek", "", OBJ, handler))]
    )
    agent.chat("go")
    assert snapshots == [["user", "assistant"]]
    stored = agent.session_store.get_messages(agent.session_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]


def test_system_prompt_is_built_once_and_replayed_byte_for_byte():
    calls = []

    class Layers:
        @hookimpl
        def hermes_prompt_layers(self, context):
            calls.append(context)
            from hermes_hookspecs import PromptLayer

            return [
                PromptLayer("volatile", f"date {context.date}", tier="volatile"),
                PromptLayer("identity", "You are hermes.", tier="stable"),
            ]

    agent = make_agent(text("1"), text("2"), plugins=[Layers()])
    agent.run_conversation("a", system_message="Be brief.")
    agent.run_conversation("b", system_message="ignored later")
    first, second = agent.client.requests
    assert first.system_prompt == second.system_prompt
    assert first.system_prompt.startswith("You are hermes.\n\nBe brief.\n\ndate ")
    assert len(calls) == 1
    assert agent.session_store.get_session(agent.session_id).system_prompt == first.system_prompt


def test_a_failed_turn_does_not_leave_an_invalid_history():
    agent = make_agent(ProviderError("down"), text("back"))
    assert agent.run_conversation("first")["exit_reason"] == "provider_error"
    assert agent.chat("second") == "back"
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.messages[1]["content"] == UNANSWERED_NOTE
    assert agent.messages[2]["content"] == "second"  # apart: the model answers the new one
    assert_request_valid(agent.client.last_request)


def test_an_interrupted_message_is_not_glued_onto_the_next_one():
    agent = make_agent(text("a long story", delay=30), text("hello to you"))
    timer = threading.Timer(0.3, agent.interrupt)
    timer.start()
    assert agent.run_conversation("tell me a story")["interrupted"]
    assert agent.chat("hello after interrupt") == "hello to you"
    sent = agent.client.last_request.messages
    assert sent[-1] == {"role": "user", "content": "hello after interrupt"}
    assert sent[-2]["role"] == "assistant" and sent[-2]["content"] == UNANSWERED_NOTE
    assert sent[-3]["content"] == "tell me a story"
    stored = agent.session_store.get_messages(agent.session_id)
    assert [m["content"] for m in stored if m["role"] == "user"] == [
        "tell me a story",
        "hello after interrupt",
    ]


def test_join_unanswered_joins_the_interrupted_message_with_the_next():
    agent = make_agent(text("a long story", delay=30), text("both"))
    threading.Timer(0.3, agent.interrupt).start()
    assert agent.run_conversation("tell me a story")["interrupted"]
    agent.run_conversation("and make it short", join_unanswered=True)
    sent = agent.client.last_request.messages
    assert sent[-1] == {"role": "user", "content": "tell me a story\n\nand make it short"}


def test_clarify_questions_from_parallel_tools_are_asked_one_at_a_time():
    active, overlap = [], threading.Event()

    def answer(question, choices):
        active.append(question)
        if len(active) > 1:
            overlap.set()
        time.sleep(0.05)
        active.remove(question)
        return "ok"

    def asks(args, ctx):
        return ctx.clarify("which?")

    tools = [Tool("ask_a", "", OBJ, asks), Tool("ask_b", "", OBJ, asks)]
    agent = make_agent(
        tool_calls(("ask_a", {}), ("ask_b", {})),
        text("done"),
        plugins=[toolset_plugin(*tools)],
        clarify_callback=answer,
    )
    agent.chat("go")
    assert not overlap.is_set()


def test_requests_carry_session_and_task_ids():
    agent = make_agent(text("ok"))
    result = agent.run_conversation("q", task_id="task_42")
    request = agent.client.last_request
    assert request.task_id == "task_42" and request.session_id == result["session_id"]


def test_model_options_and_max_tokens_reach_every_request():
    agent = make_agent(
        text("ok"), config={"model": {"max_tokens": 321, "options": {"temperature": 0.2}}}
    )
    agent.chat("q")
    request = agent.client.last_request
    assert request.max_tokens == 321 and request.options == {"temperature": 0.2}


def test_budget_summary_keeps_source_messages_aligned():
    agent = make_agent(
        tool_call("echo"), text("summary"), plugins=[toolset_plugin(echo_tool())], max_turns=1
    )
    agent.run_conversation("go", system_message="Be brief.")
    last = agent.client.last_request
    assert last.system_prompt == "Be brief."
    assert last.messages[-1]["content"].startswith("You have used all the steps")
    assert len(last.source_messages) == len(last.messages) - 1  # all but the system prompt
    assert last.source_messages[-1]["content"] == last.messages[-1]["content"]
