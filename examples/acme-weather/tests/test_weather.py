"""Tests of the example toolset that use only the hermes test kit."""

from hermes_core.testing import (
    assert_request_valid,
    load_plugin,
    make_agent,
    text,
    tool_call,
    tool_calls,
)


def test_plugin_loads_through_its_entry_point():
    record = load_plugin("weather")
    assert record.dist == "hermes-example-acme-weather"
    assert record.hooks == ["hermes_register_toolsets"]


def test_model_sees_the_tools_and_gets_the_weather():
    agent = make_agent(
        tool_call("get_weather", {"city": "Paris"}),
        text("It is sunny in Paris."),
        plugins=["weather"],
    )
    assert agent.chat("Weather in Paris?") == "It is sunny in Paris."
    first, second = agent.client.requests
    assert first.tool_names == ["get_forecast", "get_weather"]
    assert second.messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Sunny in Paris",
    }
    assert_request_valid(second)


def test_async_handler_and_parallel_calls():
    agent = make_agent(
        tool_calls(
            ("get_forecast", {"city": "Oslo", "days": 2}), ("get_weather", {"city": "Rome"})
        ),
        text("done"),
        plugins=["weather"],
    )
    agent.chat("plan my trip")
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert results[0].startswith('{"city": "Oslo"')
    assert results[1] == "Sunny in Rome"


def test_bad_arguments_go_back_to_the_model(agent=None):
    agent = make_agent(
        tool_call("get_forecast", {"city": "Oslo", "days": 30}), text("sorry"), plugins=["weather"]
    )
    agent.chat("forecast")
    assert "invalid arguments for tool 'get_forecast'" in agent.messages[2]["content"]


def test_agent_fixture_with_marker(agent, scripted_model):
    scripted_model.add("hello")
    assert agent.chat("hi") == "hello"
    assert agent.client.last_request.tool_names == []
