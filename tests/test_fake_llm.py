"""The test kit's fake LLM server: three wire protocols, JSON and SSE, errors, hangs and broken
streams; checked with the standard library's HTTP client and with the real openai and anthropic
SDKs (skipped when they are not installed), and served by ``hermes dev fake-llm``."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import Call, FakeLLM, RecordedRequest, Turn, wait_until
from hermes_hookspecs import AuthenticationError, ProviderError, RateLimitError, Usage

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
ARGS = {"path": "notes/été.txt", "content": "line one\nline two", "mode": 420}


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


# --- helpers: plain HTTP -------------------------------------------------------------------------


def post(
    llm: FakeLLM | str,
    path: str,
    body: Any,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 10,
) -> tuple[int, dict[str, str], bytes]:
    """POST ``body`` (JSON, or raw bytes) to a server (or a base URL); returns the status, the
    headers (lower-cased names) and the body."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        (llm if isinstance(llm, str) else llm.url) + path,
        data=data,
        headers={"Content-Type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, _lower(response.headers), response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, _lower(error.headers), error.read()


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def sse(raw: bytes) -> list[tuple[str | None, str]]:
    """Parse a complete SSE body into ``(event name, data)`` pairs."""
    events = []
    assert raw.endswith(b"\n\n"), raw[-80:]
    for block in raw.decode("utf-8").split("\n\n"):
        if not block:
            continue
        name, data = None, []
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            else:
                assert field == "data", line
                data.append(value)
        events.append((name, "\n".join(data)))
    return events


def sse_json(raw: bytes) -> list[tuple[str | None, Any]]:
    return [(name, data if data == "[DONE]" else json.loads(data)) for name, data in sse(raw)]


def tool_turn(**extra: Any) -> dict[str, Any]:
    return {
        "text": "Writing it.",
        "reasoning": "The user wants a file.",
        "calls": [{"name": "write_file", "arguments": ARGS, "id": "call_w"}],
        **extra,
    }


USAGE = {
    "input_tokens": 1200,
    "output_tokens": 40,
    "cache_read_tokens": 1000,
    "cache_write_tokens": 150,
    "reasoning_tokens": 12,
}


# --- chat completions ----------------------------------------------------------------------------


def test_chat_completions_json(llm: FakeLLM) -> None:
    llm.add(tool_turn(usage=USAGE))
    status, headers, raw = post(llm, CHAT, {"model": "gpt-test", "messages": []})
    assert status == 200
    assert headers["content-type"] == "application/json"
    body = json.loads(raw)
    assert body["object"] == "chat.completion"
    assert body["model"] == "gpt-test"
    assert isinstance(body["created"], int) and body["id"]
    (choice,) = body["choices"]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["role"] == "assistant"
    assert message["content"] == "Writing it."
    assert message["reasoning_content"] == "The user wants a file."
    (call,) = message["tool_calls"]
    assert call["id"] == "call_w" and call["type"] == "function"
    assert call["function"]["name"] == "write_file"
    assert json.loads(call["function"]["arguments"]) == ARGS
    assert body["usage"] == {
        "prompt_tokens": 1200,
        "completion_tokens": 40,
        "total_tokens": 1240,
        "prompt_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 150},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }


def test_chat_completions_sse_splits_tool_call_arguments(llm: FakeLLM) -> None:
    second = {"name": "read_file", "arguments": {"path": "a"}}
    llm.add({**tool_turn(), "calls": [*tool_turn()["calls"], second]})
    body = {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
    status, headers, raw = post(llm, CHAT, body)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    events = sse_json(raw)
    assert all(name is None for name, _ in events), "chat completions sends data-only SSE"
    assert events[-1] == (None, "[DONE]")
    chunks = [data for _, data in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "The user wants a file."
    assert "".join(d.get("content") or "" for d in deltas) == "Writing it."
    assert sum(1 for d in deltas if d.get("content")) > 1

    calls: dict[int, list[dict[str, Any]]] = {}
    for delta in deltas:
        for piece in delta.get("tool_calls", []):
            calls.setdefault(piece["index"], []).append(piece)
    assert sorted(calls) == [0, 1]
    for index, pieces in calls.items():
        head, rest = pieces[0], pieces[1:]
        assert head["type"] == "function" and head["id"]
        assert head["function"]["arguments"] == ""
        assert len(rest) > 1, "arguments must be split across several deltas"
        assert all(set(p) == {"index", "function"} for p in rest)
        assert all(set(p["function"]) == {"arguments"} for p in rest)
        arguments = "".join(p["function"]["arguments"] for p in rest)
        expected = ARGS if index == 0 else {"path": "a"}
        assert json.loads(arguments) == expected
    assert calls[0][0]["id"] == "call_w" and calls[0][0]["function"]["name"] == "write_file"
    assert calls[1][0]["function"]["name"] == "read_file"

    finish = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert [c["choices"][0]["finish_reason"] for c in finish] == ["tool_calls"]
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["prompt_tokens"] > 0
    assert all(c["usage"] is None for c in chunks[:-1])


def test_chat_completions_sse_without_include_usage_has_no_usage(llm: FakeLLM) -> None:
    llm.add("hi")
    events = sse_json(post(llm, CHAT, {"messages": [], "stream": True})[2])
    chunks = [d for _, d in events[:-1]]
    assert all("usage" not in c and c["choices"] for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_chunks_one_sends_each_call_in_one_delta(llm: FakeLLM) -> None:
    llm.add({**tool_turn(), "chunks": 1})
    events = sse_json(post(llm, CHAT, {"messages": [], "stream": True})[2])
    deltas = [d["choices"][0]["delta"] for _, d in events[:-1]]
    calls = [p for d in deltas for p in d.get("tool_calls", [])]
    assert len(calls) == 1
    assert calls[0]["id"] == "call_w" and json.loads(calls[0]["function"]["arguments"]) == ARGS
    assert [d["content"] for d in deltas if d.get("content")] == ["Writing it."]


# --- Responses API -------------------------------------------------------------------------------


def test_responses_json(llm: FakeLLM) -> None:
    llm.add(tool_turn(usage=USAGE))
    body = {"model": "gpt-5", "input": "hi", "instructions": "Be brief.", "store": False}
    status, _, raw = post(llm, RESPONSES, body)
    assert status == 200
    response = json.loads(raw)
    assert response["object"] == "response" and response["status"] == "completed"
    assert response["instructions"] == "Be brief." and response["model"] == "gpt-5"
    reasoning, message, call = response["output"]
    assert reasoning["type"] == "reasoning" and reasoning["id"]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "The user wants a file."}]
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"][0]["type"] == "output_text"
    assert message["content"][0]["text"] == "Writing it."
    assert call["type"] == "function_call" and call["call_id"] == "call_w" and call["id"]
    assert call["name"] == "write_file" and json.loads(call["arguments"]) == ARGS
    assert response["usage"] == {
        "input_tokens": 1200,
        "input_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 150},
        "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 12},
        "total_tokens": 1240,
    }


def test_responses_encrypted_reasoning_when_included(llm: FakeLLM) -> None:
    llm.add({"text": "ok", "reasoning": "hmm"})
    body = {"input": "hi", "include": ["reasoning.encrypted_content"]}
    reasoning = json.loads(post(llm, RESPONSES, body)[2])["output"][0]
    assert reasoning["encrypted_content"]


def test_responses_sse(llm: FakeLLM) -> None:
    llm.add(tool_turn())
    status, _, raw = post(llm, RESPONSES, {"input": "hi", "stream": True})
    assert status == 200
    events = sse_json(raw)
    assert all(name == data["type"] for name, data in events), "event: names the data's type"
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    names = [name for name, _ in events]
    assert names[:2] == ["response.created", "response.in_progress"]
    assert names[-1] == "response.completed"
    for name in (
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ):
        assert name in names
    data = [d for _, d in events]
    text = "".join(d["delta"] for d in data if d["type"] == "response.output_text.delta")
    assert text == "Writing it."
    pieces = [d["delta"] for d in data if d["type"] == "response.function_call_arguments.delta"]
    assert len(pieces) > 1 and json.loads("".join(pieces)) == ARGS
    added = [d["item"] for d in data if d["type"] == "response.output_item.added"]
    assert [i["type"] for i in added] == ["reasoning", "message", "function_call"]
    assert added[2]["call_id"] == "call_w" and added[2]["arguments"] == ""
    final = data[-1]["response"]
    assert final["status"] == "completed" and final["usage"]["output_tokens"] > 0
    assert [i["type"] for i in final["output"]] == ["reasoning", "message", "function_call"]
    assert data[0]["response"]["id"] == final["id"]


# --- Anthropic messages --------------------------------------------------------------------------


def test_anthropic_messages_json(llm: FakeLLM) -> None:
    llm.add(tool_turn(usage=USAGE, signature="sig-1"))
    status, headers, raw = post(llm, MESSAGES, {"model": "claude-test", "messages": []})
    assert status == 200 and "request-id" in headers
    message = json.loads(raw)
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["model"] == "claude-test"
    assert message["stop_reason"] == "tool_use"
    thinking, text, tool_use = message["content"]
    assert thinking == {
        "type": "thinking",
        "thinking": "The user wants a file.",
        "signature": "sig-1",
    }
    assert text == {"type": "text", "text": "Writing it."}
    assert tool_use == {"type": "tool_use", "id": "call_w", "name": "write_file", "input": ARGS}
    usage = message["usage"]
    # Anthropic counts input tokens without the cache reads and writes
    assert usage["input_tokens"] == 1200 - 1000 - 150
    assert usage["cache_read_input_tokens"] == 1000
    assert usage["cache_creation_input_tokens"] == 150
    assert usage["output_tokens"] == 40


def test_anthropic_messages_sse(llm: FakeLLM) -> None:
    llm.add(tool_turn())
    status, _, raw = post(llm, MESSAGES, {"messages": [], "stream": True})
    assert status == 200
    events = sse_json(raw)
    assert all(name == data["type"] for name, data in events)
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    assert start["usage"]["input_tokens"] > 0
    data = [d for _, d in events]
    starts = [d for d in data if d["type"] == "content_block_start"]
    assert [(s["index"], s["content_block"]["type"]) for s in starts] == [
        (0, "thinking"),
        (1, "text"),
        (2, "tool_use"),
    ]
    assert starts[2]["content_block"] == {
        "type": "tool_use",
        "id": "call_w",
        "name": "write_file",
        "input": {},
    }
    deltas = [d for d in data if d["type"] == "content_block_delta"]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for delta in deltas:
        by_type.setdefault(delta["delta"]["type"], []).append(delta)
    assert "".join(d["delta"]["thinking"] for d in by_type["thinking_delta"]) == (
        "The user wants a file."
    )
    assert len(by_type["signature_delta"]) == 1 and by_type["signature_delta"][0]["index"] == 0
    assert "".join(d["delta"]["text"] for d in by_type["text_delta"]) == "Writing it."
    partial = [d["delta"]["partial_json"] for d in by_type["input_json_delta"]]
    assert len(partial) > 1 and json.loads("".join(partial)) == ARGS
    stops = [d["index"] for d in data if d["type"] == "content_block_stop"]
    assert stops == [0, 1, 2]
    delta = data[-2]
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"]["output_tokens"] > 0


# --- finish reasons ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finish", "chat", "anthropic", "responses"),
    [
        ("stop", "stop", "end_turn", ("completed", None)),
        ("length", "length", "max_tokens", ("incomplete", "max_output_tokens")),
        ("content_filter", "content_filter", "refusal", ("incomplete", "content_filter")),
        ("max_tokens", "length", "max_tokens", ("incomplete", "max_output_tokens")),
    ],
)
def test_finish_reason_maps_to_each_api(
    llm: FakeLLM, finish: str, chat: str, anthropic: str, responses: tuple[str, str | None]
) -> None:
    llm.add(*[{"text": "cut", "finish_reason": finish}] * 4)
    body = json.loads(post(llm, CHAT, {"messages": []})[2])
    assert body["choices"][0]["finish_reason"] == chat
    assert json.loads(post(llm, MESSAGES, {"messages": []})[2])["stop_reason"] == anthropic
    response = json.loads(post(llm, RESPONSES, {"input": ""})[2])
    reason = (response["incomplete_details"] or {}).get("reason")
    assert (response["status"], reason) == responses
    events = sse_json(post(llm, RESPONSES, {"input": "", "stream": True})[2])
    assert events[-1][0] == ("response.completed" if reason is None else "response.incomplete")


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, "requests"),
        (500, "server_error"),
        (401, "invalid_request_error"),
        (404, "invalid_request_error"),
        (402, "insufficient_quota"),
    ],
)
def test_openai_error_bodies(llm: FakeLLM, path: str, status: int, kind: str) -> None:
    llm.add({"error": {"status": status, "message": "nope", "retry_after": 1.5}})
    code, headers, raw = post(llm, path, {"messages": [], "stream": True})
    assert code == status
    assert headers["retry-after"] == "1.5"
    error = json.loads(raw)["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"] == "nope" and error["type"] == kind


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, "rate_limit_error"),
        (529, "overloaded_error"),
        (500, "api_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (402, "billing_error"),
    ],
)
def test_anthropic_error_bodies(llm: FakeLLM, status: int, kind: str) -> None:
    llm.add({"error": {"status": status}})
    code, headers, raw = post(llm, MESSAGES, {"messages": []})
    assert code == status and "retry-after" not in headers
    body = json.loads(raw)
    assert body["type"] == "error"
    assert body["error"]["type"] == kind and body["error"]["message"]


def test_error_type_code_and_headers_are_scripted(llm: FakeLLM) -> None:
    error = {
        "status": 429,
        "type": "tokens",
        "code": "x",
        "retry_after": 2,
        "headers": {"X-A": "b"},
    }
    llm.add({"error": error}, {"error": error})
    code, headers, raw = post(llm, CHAT, {})
    assert headers["retry-after"] == "2" and headers["x-a"] == "b"
    assert json.loads(raw)["error"]["type"] == "tokens"
    assert json.loads(raw)["error"]["code"] == "x"
    assert json.loads(post(llm, MESSAGES, {})[2])["error"]["type"] == "tokens"


def test_context_overflow_400(llm: FakeLLM) -> None:
    message = "This model's maximum context length is 8192 tokens; your messages are longer."
    llm.add(*[{"error": {"status": 400, "message": message}}] * 2)
    error = json.loads(post(llm, CHAT, {})[2])["error"]
    assert error["code"] == "context_length_exceeded" and error["param"] == "messages"
    assert error["message"] == message
    body = json.loads(post(llm, MESSAGES, {})[2])
    assert body["error"] == {"type": "invalid_request_error", "message": message}


def test_exhausted_script_answers_500(llm: FakeLLM) -> None:
    llm.add("only one")
    assert post(llm, CHAT, {})[0] == 200
    status, headers, raw = post(llm, CHAT, {})
    assert status == 500
    assert headers["x-should-retry"] == "false"
    assert json.loads(raw)["error"]["message"] == "fake-llm: no scripted step left for request 2"
    status, _, raw = post(llm, MESSAGES, {})
    assert status == 500
    assert json.loads(raw)["error"]["message"] == "fake-llm: no scripted step left for request 3"


def test_provider_errors_are_steps(llm: FakeLLM) -> None:
    llm.add(
        RateLimitError("slow down", retry_after=3),
        AuthenticationError("bad key"),
        ProviderError("overloaded", kind="overloaded"),
    )
    status, headers, raw = post(llm, CHAT, {})
    assert (status, headers["retry-after"]) == (429, "3")
    assert json.loads(raw)["error"]["message"] == "slow down"
    assert post(llm, CHAT, {})[0] == 401
    assert post(llm, MESSAGES, {})[0] == 529


# --- hangs, delays and broken streams ------------------------------------------------------------


def test_hang_until_the_client_times_out(llm: FakeLLM) -> None:
    llm.add({"hang": True}, "after the hang")
    started = time.monotonic()
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        post(llm, CHAT, {}, timeout=0.3)
    assert time.monotonic() - started < 3
    assert len(llm.requests) == 1
    status, _, raw = post(llm, CHAT, {})
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "after the hang"


def test_stop_ends_a_hang() -> None:
    llm = FakeLLM({"hang": True}).start()
    outcome: list[Any] = []

    def call() -> None:
        try:
            outcome.append(post(llm, CHAT, {}, timeout=10))
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    assert wait_until(lambda: len(llm.requests) == 1)
    started = time.monotonic()
    llm.stop()
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - started < 3
    assert isinstance(outcome[0], Exception)


def test_delay_and_chunk_delay(llm: FakeLLM) -> None:
    llm.add({"text": "abcd", "delay": 0.2}, {"text": "abcd", "chunks": 4, "chunk_delay": 0.05})
    started = time.monotonic()
    post(llm, CHAT, {})
    assert time.monotonic() - started >= 0.2
    started = time.monotonic()
    post(llm, CHAT, {"stream": True})
    assert time.monotonic() - started >= 0.05 * 6  # role, 4 pieces, finish, [DONE]: 6 gaps


@pytest.mark.parametrize("path", [CHAT, RESPONSES, MESSAGES])
def test_break_stream_after_n_events(llm: FakeLLM, path: str) -> None:
    llm.add({"text": "hello there", "break_stream_after": 3})
    request = urllib.request.Request(
        llm.url + path, data=b'{"stream": true}', headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        with pytest.raises(http.client.IncompleteRead) as broken:
            response.read()
    assert len(sse(broken.value.partial)) == 3


def test_break_a_json_answer(llm: FakeLLM) -> None:
    llm.add({"text": "hello", "break_stream_after": 0}, "next")
    request = urllib.request.Request(llm.url + CHAT, data=b"{}")
    with urllib.request.urlopen(request, timeout=10) as response:
        with pytest.raises(http.client.IncompleteRead):
            response.read()
    assert post(llm, CHAT, {})[0] == 200


def test_hang_after_n_events(llm: FakeLLM) -> None:
    llm.add({"text": "hello there", "hang_after": 2})
    connection = http.client.HTTPConnection("127.0.0.1", llm.port, timeout=0.5)
    connection.request("POST", MESSAGES, body=b'{"stream": true}')
    response = connection.getresponse()
    received = b""
    with pytest.raises(TimeoutError):
        while True:
            received += response.read1(65536)
    connection.close()
    assert [name for name, _ in sse(received)] == ["message_start", "ping"]


# --- paths, recording, step forms ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "wire"),
    [
        ("/openrouter/v1/chat/completions", "chat_completions"),
        ("/api/v1/chat/completions?x=1", "chat_completions"),
        ("/backend-api/codex/responses", "codex_responses"),
        ("/anthropic/v1/messages", "anthropic_messages"),
    ],
)
def test_any_prefix(llm: FakeLLM, path: str, wire: str) -> None:
    llm.add("hi")
    assert post(llm, path, {})[0] == 200
    assert llm.last_request.path == path and llm.last_request.wire == wire


def test_models_and_unknown_paths_consume_no_step(llm: FakeLLM) -> None:
    llm.add("hi")
    with urllib.request.urlopen(llm.url + "/v1/models", timeout=10) as response:
        models = json.loads(response.read())
    assert models["object"] == "list" and models["data"][0]["id"] == "fake-model"
    assert post(llm, "/v1/embeddings", {})[0] == 404
    assert llm.remaining == 1
    assert [r.wire for r in llm.requests] == [None, None]
    assert post(llm, CHAT, {})[0] == 200
    assert llm.model_requests == [llm.last_request] and llm.last_request.number == 1


def test_records_raw_bytes_and_headers(llm: FakeLLM) -> None:
    llm.add("a", "b")
    raw = b'{"model":"m",  "messages":[{"role":"user","content":"h\\u00e9"}]}'
    post(llm, CHAT, raw, headers={"Authorization": "Bearer sk-test", "X-Custom": "1"})
    post(llm, MESSAGES, b"not json", headers={"x-api-key": "k"})
    first, second = llm.requests
    assert isinstance(first, RecordedRequest)
    assert first.body == raw and first.method == "POST" and first.path == CHAT
    assert first.json["messages"][0]["content"] == "hé"
    assert first.headers["authorization"] == "Bearer sk-test" and first.headers["x-custom"] == "1"
    assert first.model == "m" and not first.stream
    assert second.body == b"not json" and second.json is None
    assert second.headers["x-api-key"] == "k"
    assert llm.last_request is second


def test_keep_alive_connection_serves_several_requests(llm: FakeLLM) -> None:
    llm.add("one", "two")
    connection = http.client.HTTPConnection("127.0.0.1", llm.port, timeout=5)
    for expected in ("one", "two"):
        connection.request("POST", CHAT, body=b'{"stream": true}')
        response = connection.getresponse()
        text = "".join(
            d["choices"][0]["delta"].get("content") or "" for _, d in sse_json(response.read())[:-1]
        )
        assert text == expected
    connection.close()


def test_function_steps_get_the_request(llm: FakeLLM) -> None:
    def answer(request: RecordedRequest) -> Any:
        return f"you said {request.json['messages'][-1]['content']}"

    llm.add(answer)
    body = json.loads(post(llm, CHAT, {"messages": [{"role": "user", "content": "hi"}]})[2])
    assert body["choices"][0]["message"]["content"] == "you said hi"


def test_a_failing_function_step_answers_500_and_is_kept(llm: FakeLLM) -> None:
    def broken(request: RecordedRequest) -> Any:
        raise AssertionError("wrong request")

    llm.add(broken)
    status, _, raw = post(llm, CHAT, {})
    assert status == 500
    assert "AssertionError: wrong request" in json.loads(raw)["error"]["message"]
    assert [str(e) for e in llm.errors] == ["wrong request"]


def test_kit_turns_and_strings(llm: FakeLLM) -> None:
    llm.add(
        Turn(
            text=None,
            calls=[Call("a", {"x": 1}, "c1"), Call("b", "{broken")],
            usage=Usage(input_tokens=7, output_tokens=3),
        ),
        "plain",
    )
    body = json.loads(post(llm, CHAT, {})[2])
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == ['{"x": 1}', "{broken"]
    assert message["tool_calls"][0]["id"] == "c1" and message["tool_calls"][1]["id"]
    assert body["usage"]["prompt_tokens"] == 7
    assert json.loads(post(llm, MESSAGES, {})[2])["content"] == [{"type": "text", "text": "plain"}]


@pytest.mark.parametrize(
    "step",
    [
        {"txt": "typo"},
        {"calls": [{"arguments": {}}]},
        {"error": {"message": "no status"}},
        {"error": {"status": 200}},
        {"hang": True, "text": "x"},
        {"usage": {"prompt_tokens": 1}},
        {"chunks": 0},
        42,
    ],
)
def test_malformed_steps_fail_when_added(step: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="fake-llm step"):
        FakeLLM(step)


def test_loopback_only() -> None:
    for host in ("0.0.0.0", "192.168.1.10", "example.com", "::"):
        with pytest.raises(ValueError, match="loopback"):
            FakeLLM(host=host)
    with FakeLLM("hi", host="localhost") as llm:
        assert llm.url.startswith("http://127.0.0.1:") and not llm.url.endswith("/")
        assert llm.openai_base_url == llm.url + "/v1"
        assert llm.anthropic_base_url == llm.url


def test_ipv6_loopback() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        llm = FakeLLM("hi", host="::1").start()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with llm:
        assert llm.url.startswith("http://[::1]:")
        assert post(llm, CHAT, {})[0] == 200


def test_url_needs_a_started_server() -> None:
    llm = FakeLLM()
    with pytest.raises(RuntimeError, match="not started"):
        _ = llm.url
    llm.start()
    llm.stop()
    llm.stop()
    with pytest.raises(RuntimeError):
        llm.start()


def test_fixture(fake_llm: FakeLLM) -> None:
    fake_llm.add("from the fixture")
    assert json.loads(post(fake_llm, MESSAGES, {})[2])["content"][0]["text"] == "from the fixture"


def test_importing_the_kit_does_not_import_the_server() -> None:
    code = (
        "import sys, hermes_core.testing as t\n"
        "assert 'http.server' not in sys.modules, 'http.server imported'\n"
        "assert 'hermes_core.testing.fake_llm' not in sys.modules\n"
        "assert t.FakeLLM.__name__ == 'FakeLLM' and 'http.server' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- the real SDKs -------------------------------------------------------------------------------


def openai_client(llm: FakeLLM, **kwargs: Any) -> Any:
    openai = pytest.importorskip("openai")
    options = {"max_retries": 0, "timeout": 10.0, **kwargs}
    return openai.OpenAI(base_url=llm.openai_base_url, api_key="sk-test", **options)


def anthropic_client(llm: FakeLLM, **kwargs: Any) -> Any:
    anthropic = pytest.importorskip("anthropic")
    options = {"max_retries": 0, "timeout": 10.0, **kwargs}
    return anthropic.Anthropic(base_url=llm.anthropic_base_url, api_key="sk-ant-test", **options)


USER = [{"role": "user", "content": "write it"}]
PARALLEL = [
    {"name": "write_file", "arguments": ARGS, "id": "call_w"},
    {"name": "read_file", "arguments": {"path": "b"}, "id": "call_r"},
]


def test_openai_sdk_chat_completions(llm: FakeLLM) -> None:
    client = openai_client(llm)
    llm.add(tool_turn(usage=USAGE))
    completion = client.chat.completions.create(model="gpt-test", messages=USER)
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls"
    assert message.content == "Writing it."
    assert message.tool_calls[0].id == "call_w"
    assert json.loads(message.tool_calls[0].function.arguments) == ARGS
    assert (message.model_extra or {}).get("reasoning_content") or getattr(
        message, "reasoning_content", None
    ) == "The user wants a file."
    assert completion.usage.prompt_tokens_details.cached_tokens == 1000
    assert completion.usage.completion_tokens_details.reasoning_tokens == 12
    request = llm.last_request
    assert request.path == CHAT and request.headers["authorization"] == "Bearer sk-test"
    assert request.json["messages"] == USER


def test_openai_sdk_chat_completions_stream_reassembles_split_calls(llm: FakeLLM) -> None:
    client = openai_client(llm)
    llm.add({"text": "Both.", "calls": PARALLEL, "chunks": 5})
    stream = client.chat.completions.create(
        model="m", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    text, calls, usage, finish, argument_deltas = "", {}, None, None, 0
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for piece in choice.delta.tool_calls or []:
                entry = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] += piece.id or ""
                if piece.function:
                    entry["name"] += piece.function.name or ""
                    entry["arguments"] += piece.function.arguments or ""
                    argument_deltas += bool(piece.function.arguments)
    assert text == "Both." and finish == "tool_calls" and usage.total_tokens > 0
    assert argument_deltas >= 10
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("call_w", "write_file", ARGS),
        ("call_r", "read_file", {"path": "b"}),
    ]

    llm.add({"text": "Both.", "calls": PARALLEL, "reasoning": "thinking"})
    with client.chat.completions.stream(model="m", messages=USER) as helper:
        kinds = [event.type for event in helper]
        final = helper.get_final_completion()
    assert kinds.count("tool_calls.function.arguments.done") == 2
    assert "content.done" in kinds
    message = final.choices[0].message
    assert message.content == "Both."
    assert [json.loads(c.function.arguments) for c in message.tool_calls] == [ARGS, {"path": "b"}]
    assert [c.id for c in message.tool_calls] == ["call_w", "call_r"]


def test_openai_sdk_responses(llm: FakeLLM) -> None:
    client = openai_client(llm)
    llm.add(tool_turn(usage=USAGE))
    response = client.responses.create(model="gpt-5", input="write it", store=False)
    assert response.output_text == "Writing it."
    kinds = [item.type for item in response.output]
    assert kinds == ["reasoning", "message", "function_call"]
    call = response.output[2]
    assert call.call_id == "call_w" and json.loads(call.arguments) == ARGS
    assert response.output[0].summary[0].text == "The user wants a file."
    assert response.usage.input_tokens_details.cached_tokens == 1000
    assert llm.last_request.path == RESPONSES and llm.last_request.json["store"] is False


def test_openai_sdk_responses_stream(llm: FakeLLM) -> None:
    client = openai_client(llm)
    llm.add({**tool_turn(), "calls": PARALLEL})
    with client.responses.stream(model="gpt-5", input="write it") as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == "Writing it." and final.output_text == "Writing it."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.call_id, json.loads(c.arguments)) for c in calls] == [
        ("call_w", ARGS),
        ("call_r", {"path": "b"}),
    ]

    llm.add(tool_turn())
    events = list(client.responses.create(model="gpt-5", input="write it", stream=True))
    assert events[-1].type == "response.completed"
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert json.loads(done[0].arguments) == ARGS


def test_anthropic_sdk_messages(llm: FakeLLM) -> None:
    client = anthropic_client(llm)
    llm.add(tool_turn(usage=USAGE))
    message = client.messages.create(model="claude-test", max_tokens=100, messages=USER)
    assert message.stop_reason == "tool_use"
    thinking, text, tool_use = message.content
    assert thinking.thinking == "The user wants a file." and thinking.signature
    assert text.text == "Writing it."
    assert (tool_use.id, tool_use.name, tool_use.input) == ("call_w", "write_file", ARGS)
    assert message.usage.cache_read_input_tokens == 1000
    assert message.usage.cache_creation_input_tokens == 150
    request = llm.last_request
    assert request.path == MESSAGES
    # this SDK generation sends the key as a bearer token; older ones used x-api-key
    key = request.headers.get("x-api-key") or request.headers["authorization"]
    assert key.removeprefix("Bearer ") == "sk-ant-test"
    assert "anthropic-version" in request.headers


def test_anthropic_sdk_stream_final_message_has_tool_input(llm: FakeLLM) -> None:
    client = anthropic_client(llm)
    llm.add({**tool_turn(), "calls": PARALLEL, "usage": USAGE})
    with client.messages.stream(model="claude-test", max_tokens=100, messages=USER) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Writing it."
    uses = [block for block in final.content if block.type == "tool_use"]
    assert [(u.id, u.name, u.input) for u in uses] == [
        ("call_w", "write_file", ARGS),
        ("call_r", "read_file", {"path": "b"}),
    ]
    assert final.content[0].type == "thinking" and final.content[0].signature
    assert final.stop_reason == "tool_use"
    assert final.usage.cache_read_input_tokens == 1000
    assert final.usage.output_tokens == 40


def test_openai_sdk_rate_limit_error(llm: FakeLLM) -> None:
    openai = pytest.importorskip("openai")
    client = openai_client(llm)
    llm.add({"error": {"status": 429, "message": "slow down", "retry_after": 1.5}})
    with pytest.raises(openai.RateLimitError) as raised:
        client.chat.completions.create(model="m", messages=USER)
    assert raised.value.status_code == 429
    assert raised.value.response.headers["retry-after"] == "1.5"
    assert raised.value.body["message"] == "slow down"
    assert raised.value.body["code"] == "rate_limit_exceeded"


def test_sdks_honour_retry_after(llm: FakeLLM) -> None:
    openai_sdk = openai_client(llm, max_retries=1)
    anthropic_sdk = anthropic_client(llm, max_retries=1)
    rate_limited = {"error": {"status": 429, "retry_after": 0.3}}
    llm.add(rate_limited, "after the wait", rate_limited, "after the wait")
    started = time.monotonic()
    completion = openai_sdk.chat.completions.create(model="m", messages=USER)
    assert completion.choices[0].message.content == "after the wait"
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    message = anthropic_sdk.messages.create(model="m", max_tokens=10, messages=USER)
    assert message.content[0].text == "after the wait"
    assert time.monotonic() - started >= 0.3
    assert len(llm.requests) == 4


def test_anthropic_sdk_errors(llm: FakeLLM) -> None:
    anthropic = pytest.importorskip("anthropic")
    client = anthropic_client(llm)
    llm.add({"error": {"status": 429, "retry_after": 2}}, {"error": {"status": 529}})
    with pytest.raises(anthropic.RateLimitError) as raised:
        client.messages.create(model="m", max_tokens=10, messages=USER)
    assert raised.value.response.headers["retry-after"] == "2"
    assert raised.value.body["error"]["type"] == "rate_limit_error"
    with pytest.raises(anthropic.InternalServerError) as overloaded:
        client.messages.create(model="m", max_tokens=10, messages=USER)
    assert overloaded.value.status_code == 529


def test_sdk_timeouts_and_broken_streams(llm: FakeLLM) -> None:
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    client = openai_client(llm, timeout=0.3)
    llm.add({"hang": True}, {"text": "hello there", "break_stream_after": 3})
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="m", messages=USER)
    with pytest.raises(openai.APIConnectionError):
        list(client.chat.completions.create(model="m", messages=USER, stream=True))
    a_client = anthropic_client(llm, timeout=0.3)
    llm.add({"hang": True}, {"text": "hello there", "break_stream_after": 3})
    with pytest.raises(anthropic.APITimeoutError):
        a_client.messages.create(model="m", max_tokens=10, messages=USER)
    # the anthropic SDK lets the transport's error through when a stream breaks
    with pytest.raises(Exception, match="incomplete chunked read"):
        with a_client.messages.stream(model="m", max_tokens=10, messages=USER) as stream:
            stream.get_final_message()


# --- hermes dev fake-llm -------------------------------------------------------------------------


def _hermes(*argv: str, home: Path, **kwargs: Any) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(HERMES_HOME=str(home), HERMES_PLUGINS="")
    return subprocess.Popen(
        [sys.executable, "-c", "import sys, hermes_core.cli as c; sys.exit(c.main())", *argv],
        env=env,
        text=True,
        **kwargs,
    )


def test_hermes_dev_fake_llm_serves_a_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    steps = [
        {"calls": [{"name": "roll", "arguments": {"sides": 6}}]},
        {"text": "You rolled 4."},
        {"error": {"status": 429, "retry_after": 1}},
    ]
    script.write_text(json.dumps(steps), encoding="utf-8")
    process = _hermes(
        "dev",
        "fake-llm",
        "--script",
        str(script),
        "--port",
        "0",
        home=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and not url.endswith("/")
        body = json.loads(post(url, CHAT, {"messages": []})[2])
        assert body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "roll"
        events = sse_json(post(url, MESSAGES, {"stream": True})[2])
        text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
        assert text == "You rolled 4."
        status, headers, _ = post(url, RESPONSES, {})
        assert (status, headers["retry-after"]) == (429, "1")
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    assert process.returncode == 0, stderr
    assert "POST /v1/messages" in stderr and "stopped after 3 request(s), 0 step(s) left" in stderr


def test_hermes_dev_fake_llm_refuses_bad_input(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('["hi"]', encoding="utf-8")
    bad = _hermes(
        "dev",
        "fake-llm",
        "--script",
        str(script),
        "--host",
        "0.0.0.0",
        home=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = bad.communicate(timeout=30)
    assert bad.returncode == 2 and out == "" and "loopback" in err
    script.write_text('[{"txt": "typo"}]', encoding="utf-8")
    bad = _hermes(
        "dev",
        "fake-llm",
        "--script",
        str(script),
        home=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = bad.communicate(timeout=30)
    assert bad.returncode == 2 and "step 1" in err and "txt" in err


def test_hermes_dev_help(hermes_cli: Any) -> None:
    result = hermes_cli("dev", "--help")
    assert result.exit_code == 0 and "fake-llm" in result.stdout
    result = hermes_cli("dev", "fake-llm", "--help")
    assert result.exit_code == 0
    for option in ("--script", "--port", "--host"):
        assert option in result.stdout
