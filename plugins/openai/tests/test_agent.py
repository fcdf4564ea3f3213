"""End to end: a real Agent resolves the ``custom`` provider through the plugin's entry point and
talks to the fake LLM server through the ``openai`` SDK."""

from __future__ import annotations

import json

import pytest

from hermes_core.testing import Agent, Callbacks, FakeLLM, assert_valid_transcript, plugin_manager
from hermes_hookspecs import PromptLayer, Tool, Toolset, hookimpl


def city_weather(args, ctx):
    return f"Sunny in {args['city']}"


def local_time(args, ctx):
    return "12:00"


class WeatherPlugin:
    @hookimpl
    def hermes_prompt_layers(self, context):
        return [
            PromptLayer(name="role", text="You answer weather questions. Be brief."),
            PromptLayer(
                name="tools", text=f"Tools: {', '.join(context.tool_names)}", tier="context"
            ),
        ]

    @hookimpl
    def hermes_register_toolsets(self, register):
        register(
            Toolset(
                name="weather",
                description="Weather",
                tools=[
                    Tool(
                        name="get_weather",
                        description="Current weather for a city",
                        parameters={
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                        },
                        handler=city_weather,
                    ),
                    Tool(
                        name="get_time",
                        description="The local time",
                        parameters={"type": "object", "properties": {}},
                        handler=local_time,
                    ),
                ],
            )
        )


@pytest.fixture
def fake():
    server = FakeLLM().start()
    yield server
    server.stop()
    assert not server.errors, server.errors


def make(fake, **kwargs):
    kwargs.setdefault("config", {})
    return Agent.from_config(
        provider="custom",
        base_url=fake.openai_base_url,
        model="m",
        plugins=plugin_manager(["openai", WeatherPlugin()]),
        toolsets=["weather"],
        **kwargs,
    )


@pytest.mark.parametrize("stream", [False, True])
def test_tool_call_then_text_with_a_byte_stable_prefix(fake, stream):
    fake.add(
        {"calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {
            "text": "Let me check the time too.",
            "calls": [
                {"name": "get_time", "arguments": {}},
                {"name": "get_weather", "arguments": {"city": "Oslo"}},
            ],
        },
        "Paris and Oslo are sunny; it is noon.",
        {"calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}], "chunks": 1},
        "Rome too.",
    )
    deltas = []
    agent = make(fake, stream=stream, callbacks=Callbacks(stream_delta=deltas.append))
    with agent:
        assert agent.chat("Weather in Paris and Oslo?") == "Paris and Oslo are sunny; it is noon."
        assert agent.chat("And Rome?") == "Rome too."
        messages = agent.messages
    assert_valid_transcript(messages)
    tool_results = [m["content"] for m in messages if m["role"] == "tool"]
    assert tool_results == ["Sunny in Paris", "12:00", "Sunny in Oslo", "Sunny in Rome"]
    if stream:
        assert "".join(deltas).endswith("Rome too.")

    requests = fake.model_requests
    assert len(requests) == 5
    bodies = [json.loads(r.body) for r in requests]
    tools = [json.dumps(b["tools"], ensure_ascii=False) for b in bodies]
    systems = [json.dumps(b["messages"][0], ensure_ascii=False) for b in bodies]
    assert len(set(tools)) == 1 and len(set(systems)) == 1
    assert bodies[0]["messages"][0]["role"] == "system"
    assert "Be brief." in bodies[0]["messages"][0]["content"]
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == ["get_time", "get_weather"]
    # each request starts with the previous one: the prefix never changes
    for earlier, later in zip(bodies, bodies[1:], strict=False):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
    # nothing internal went over the wire
    for body in bodies:
        for message in body["messages"]:
            assert not [
                k for k in message if k.startswith("_") or k in ("reasoning", "finish_reason")
            ]


def test_rate_limit_is_retried_by_the_core(fake):
    fake.add({"error": {"status": 429, "message": "slow down", "retry_after": 0}}, "done")
    agent = make(fake, config={"agent": {"retry_base_delay": 0.01}})
    with agent:
        assert agent.chat("hi") == "done"
    assert len(fake.model_requests) == 2


def test_a_broken_stream_is_retried_whole(fake):
    fake.add({"text": "partial answer here", "chunks": 6, "break_stream_after": 3}, "whole answer")
    deltas = []
    agent = make(
        fake,
        stream=True,
        callbacks=Callbacks(stream_delta=deltas.append),
        config={"agent": {"retry_base_delay": 0.01}},
    )
    with agent:
        assert agent.chat("hi") == "whole answer"
        assert [m["content"] for m in agent.messages if m["role"] == "assistant"] == [
            "whole answer"
        ]


def test_authentication_error_ends_the_turn(fake):
    fake.add({"error": {"status": 401}})
    with make(fake) as agent:
        result = agent.run_conversation("hi")
    assert result["exit_reason"] == "provider_error"
    assert "HTTP 401" in result["error"]
    assert len(fake.model_requests) == 1  # not retried


def test_responses_mode_replays_reasoning_through_the_core(fake):
    fake.add(
        {
            "reasoning": "Need the weather.",
            "calls": [{"name": "get_weather", "arguments": {"city": "Lima"}}],
        },
        {"reasoning": "Now answer.", "text": "Sunny in Lima."},
    )
    with make(fake, api_mode="codex_responses") as agent:
        assert agent.chat("Weather in Lima?") == "Sunny in Lima."
        assert agent.messages[1]["_responses_items"][0]["type"] == "reasoning"
    first, second = (json.loads(r.body) for r in fake.model_requests)
    assert first["instructions"] == second["instructions"]
    assert first["tools"] == second["tools"]
    kinds = [i.get("type", "message") for i in second["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    assert second["input"][1]["encrypted_content"] == "fake-encrypted-reasoning-1"
    call_id = second["input"][2]["call_id"]
    assert second["input"][3]["call_id"] == call_id


@pytest.mark.parametrize("mode", ["chat_completions", "codex_responses"])
def test_the_prefix_survives_a_resume(fake, mode):
    fake.add(
        {
            "reasoning": "Look it up.",
            "calls": [{"name": "get_weather", "arguments": {"city": "Kyiv"}}],
        },
        "Sunny in Kyiv.",
        "Still sunny.",
    )
    with make(fake, api_mode=mode) as first:
        assert first.chat("Weather in Kyiv?") == "Sunny in Kyiv."
        store, session_id = first.session_store, first.session_id
    with make(fake, api_mode=mode, session_store=store, session_id=session_id) as resumed:
        assert resumed.chat("And now?") == "Still sunny."
    bodies = [json.loads(r.body) for r in fake.model_requests]
    if mode == "chat_completions":
        prefixes = [json.dumps([b["messages"][0], b["tools"]]) for b in bodies]
    else:
        prefixes = [json.dumps([b["instructions"], b["tools"]]) for b in bodies]
        # the reasoning item stored with the session is replayed after the resume too
        assert [i.get("type") for i in bodies[2]["input"]].count("reasoning") == 1
    assert len(set(prefixes)) == 1
