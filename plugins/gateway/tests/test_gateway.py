"""hermes-gateway: the API server through the real openai SDK, the signed webhook with a local
receiver, session routing and commands, the allow-list, busy policies, restarts, graceful
shutdown (in a real process with SIGTERM) and the cron outbox."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hermes_gateway import Attachment, InboundMessage, PlatformAdapter
from hermes_gateway.core import command_of, prompt_of
from hermes_gateway.hookspecs import PLATFORM_ADAPTERS_HOOK
from hermes_gateway.serve import GatewayThread, build
from hermes_gateway.settings import GatewaySettingsError, load_settings

from hermes_core.testing import (
    FakeLLM,
    HostRunner,
    ScriptedModel,
    SQLiteSessionStore,
    Turn,
    isolated_environ,
    load_plugin,
    make_host,
    make_runner,
    tool_call,
    wait_until,
)
from hermes_hookspecs import (
    AgentOutcome,
    AgentTask,
    HermesError,
    ProviderError,
    Tool,
    Toolset,
    hookimpl,
)

KEY = "test-key-123"
SECRET = "webhook-secret"


class Canary:
    """A toolset whose one tool writes a file: proof that a tool ran (and where)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def touch(self, args: dict[str, Any], ctx: Any) -> str:
        (self.folder / f"canary-{args['name']}").write_text(ctx.session_id or "?")
        return f"touched {args['name']}"

    @hookimpl
    def hermes_register_toolsets(self, register: Any) -> None:
        register(
            Toolset(
                name="canary",
                description="test canary",
                tools=[
                    Tool(
                        name="touch",
                        description="Create a canary file",
                        parameters={
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        },
                        handler=self.touch,
                    )
                ],
            )
        )


def gateway_runner(
    home: Path, model: ScriptedModel | None = None, config: Mapping[str, Any] | None = None
) -> HostRunner:
    """A runner with the gateway, openai and canary plugins, storing sessions in ``home``;
    driven by ``model`` when given, else by the configured provider."""
    return make_runner(
        model=model,
        scripted=model is not None,
        plugins=["gateway", "openai", Canary(home)],
        home=home,
        config={"toolsets": ["canary"], "agent": {"api_max_retries": 0}, **(config or {})},
    )


def serve_gateway(
    home: Path, runner: HostRunner, gateway_config: Mapping[str, Any]
) -> GatewayThread:
    """Build and start the gateway of ``gateway_config`` (the ``gateway`` section)."""
    factories = {
        name: entry.value
        for name, entry in runner.host.registry.named(PLATFORM_ADAPTERS_HOOK).items()
    }
    lines: list[str] = []
    gateway = build(home, {"gateway": dict(gateway_config)}, runner, factories, lines.append)
    served = GatewayThread(gateway, home).start()
    served.log = lines  # type: ignore[attr-defined]
    return served


class Receiver:
    """A local HTTP server recording every POST (the webhook's delivery URL)."""

    def __init__(self) -> None:
        self.posts: list[tuple[dict[str, str], bytes]] = []
        self.status = 200
        self.answer_delay = 0.0
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._changed:
                    receiver.posts.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    receiver._changed.notify_all()
                time.sleep(receiver.answer_delay)
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/hook"

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        with self._changed:
            found = [json.loads(body) for _, body in self.posts]
        return [e for e in found if kind is None or e["type"] == kind]

    def wait_for(self, count: int, kind: str = "message", timeout: float = 15) -> list[dict]:
        with self._changed:
            self._changed.wait_for(lambda: len(self.events_unlocked(kind)) >= count, timeout)
        return self.events(kind)

    def events_unlocked(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in (json.loads(b) for _, b in self.posts) if e["type"] == kind]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def _api(port: int = 0, **extra: Any) -> dict[str, Any]:
    return {"api": {"adapter": "api_server", "port": port, "key": KEY, "allow_all": True, **extra}}


def _client(served: GatewayThread, key: str = KEY) -> Any:
    import openai

    adapter = served.gateway.adapters["api"]
    return openai.OpenAI(base_url=adapter.url, api_key=key, max_retries=0, timeout=30)


def _fake_llm_config(server: Any) -> dict[str, Any]:
    return {
        "model": {
            "provider": "custom",
            "base_url": server.openai_base_url,
            "default": "fake-model",
            "api_key": "test",
        }
    }


# --- the contract ------------------------------------------------------------------------------


def test_the_plugin_registers_its_adapters_through_its_entry_point():
    record = load_plugin("gateway")
    assert "hermes_register_platform_adapters" in record.hooks
    registered = make_host(plugins=["gateway"]).registry.named(PLATFORM_ADAPTERS_HOOK)
    assert {"api_server", "webhook"} <= set(registered)
    adapter = registered["webhook"].value("hooks", {"port": 0})
    assert isinstance(adapter, PlatformAdapter) and adapter.can_edit


def test_messages_route_commands_and_prompts():
    assert command_of("/new") == "new" and command_of(" /STOP@hermes_bot now") == "stop"
    assert command_of("/etc/hosts is broken") is None and command_of("hello") is None
    message = InboundMessage(
        platform="p",
        chat_id="c",
        user_id="u",
        text="look",
        attachments=(Attachment(kind="image", url="http://x/y.png", name="y.png"),),
    )
    assert prompt_of(message) == "look\n[attachment: image (y.png): http://x/y.png]"


# --- the API server through the real openai SDK --------------------------------------------


def test_chat_completions_run_the_tool_server_side_and_continue_by_header(tmp_path):
    with FakeLLM(tool_call("touch", {"name": "one"}), "done: one", "second answer") as server:
        runner = gateway_runner(tmp_path, config=_fake_llm_config(server))
        served = serve_gateway(tmp_path, runner, {"platforms": _api()})
        try:
            client = _client(served)
            raw = client.chat.completions.with_raw_response.create(
                model="hermes-agent", messages=[{"role": "user", "content": "touch one"}]
            )
            answer = raw.parse()
            session_id = raw.headers["x-hermes-session-id"]
            assert answer.choices[0].message.content == "done: one"
            assert answer.choices[0].finish_reason == "stop"
            assert answer.usage.total_tokens > 0
            # the tool ran here, in the gateway, in the session the header names
            assert (tmp_path / "canary-one").read_text() == session_id
            second = client.chat.completions.create(
                model="hermes-agent",
                messages=[{"role": "user", "content": "and now?"}],
                extra_headers={"X-Hermes-Session-Id": session_id},
            )
            assert second.choices[0].message.content == "second answer"
            history = server.last_request.json["messages"]
            assert [m["role"] for m in history if m["role"] != "system"] == [
                "user",
                "assistant",
                "tool",
                "assistant",
                "user",
            ]
            assert history[-1]["content"].startswith("and now?")
        finally:
            served.stop()
    stored = SQLiteSessionStore(tmp_path / "sessions.db").get_session(session_id)
    assert stored is not None and stored.source == "api"


def test_chat_completions_stream_in_openai_chunks(tmp_path):
    with FakeLLM({"text": "streamed answer here", "chunks": 4}) as server:
        runner = gateway_runner(tmp_path, config=_fake_llm_config(server))
        served = serve_gateway(tmp_path, runner, {"platforms": _api()})
        try:
            stream = _client(served).chat.completions.create(
                model="hermes-agent",
                messages=[
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "hi"},
                ],
                stream=True,
                stream_options={"include_usage": True},
            )
            chunks = list(stream)
        finally:
            served.stop()
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streamed answer here"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    # the client's system message went into the new session's system prompt
    assert "Be brief." in server.last_request.json["messages"][0]["content"]


def test_responses_whole_and_streamed_continue_by_previous_response_id(tmp_path):
    with FakeLLM(tool_call("touch", {"name": "r"}), "first", "second, streamed") as server:
        runner = gateway_runner(tmp_path, config=_fake_llm_config(server))
        served = serve_gateway(tmp_path, runner, {"platforms": _api()})
        try:
            client = _client(served)
            first = client.responses.create(model="hermes-agent", input="touch r")
            assert first.output_text == "first" and first.status == "completed"
            assert first.id.startswith("resp_") and (tmp_path / "canary-r").exists()
            events = list(
                client.responses.create(
                    model="hermes-agent",
                    input=[{"role": "user", "content": "again"}],
                    previous_response_id=first.id,
                    stream=True,
                )
            )
            kinds = [e.type for e in events]
            assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
            deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
            assert deltas == "second, streamed"
            assert events[-1].response.output_text == "second, streamed"
            assert [e.sequence_number for e in events] == list(range(len(events)))
            # the second turn continued the first one's session
            assert "touch r" in json.dumps(server.last_request.json["messages"])
            with pytest.raises(Exception) as unknown:
                client.responses.create(
                    model="hermes-agent", input="x", previous_response_id="resp_nope"
                )
            assert getattr(unknown.value, "status_code", None) == 404
        finally:
            served.stop()
    assert len(server.model_requests) == 3


def test_models_and_the_key_is_required(tmp_path):
    with FakeLLM("never") as server:
        runner = gateway_runner(tmp_path, config=_fake_llm_config(server))
        served = serve_gateway(tmp_path, runner, {"platforms": _api(model_name="my-agent")})
        try:
            import openai

            assert [m.id for m in _client(served).models.list()] == ["my-agent"]
            with pytest.raises(openai.AuthenticationError):
                _client(served, key="wrong").chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}]
                )
            with pytest.raises(openai.BadRequestError):
                _client(served).chat.completions.create(
                    model="m", messages=[{"role": "assistant", "content": "no user"}]
                )
        finally:
            served.stop()
        assert server.model_requests == []


def test_no_key_refuses_to_start_with_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("HERMES_API_SERVER_KEY", raising=False)
    runner = gateway_runner(tmp_path, ScriptedModel())
    config = {"platforms": {"api": {"adapter": "api_server", "port": 0, "allow_all": True}}}
    with pytest.raises(HermesError, match="needs a key: set HERMES_API_SERVER_KEY") as refused:
        serve_gateway(tmp_path, runner, config)
    assert "\n" not in str(refused.value)


def test_a_port_in_use_is_one_line_naming_the_adapter_and_address(tmp_path):
    import socket

    runner = gateway_runner(tmp_path, ScriptedModel())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(HermesError, match=f"API server cannot listen on .*:{port}") as refused:
            serve_gateway(tmp_path, runner, {"platforms": _api(port=port, host="127.0.0.1")})
    assert "\n" not in str(refused.value)


def test_the_allow_list_fails_closed(tmp_path):
    model = ScriptedModel()
    runner = gateway_runner(tmp_path, model)
    platforms = {"api": {"adapter": "api_server", "port": 0, "key": KEY}}
    served = serve_gateway(tmp_path, runner, {"platforms": platforms})
    try:
        import openai

        with pytest.raises(openai.PermissionDeniedError, match="not allowed"):
            _client(served).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "touch x"}]
            )
    finally:
        served.stop()
    assert model.requests == [] and not list(tmp_path.glob("canary-*"))
    assert any("allows nobody" in line for line in served.log)


@pytest.mark.parametrize("busy", ["queue", "interrupt"])
def test_two_requests_in_one_session_queue_or_interrupt(tmp_path, busy):
    import openai

    model = ScriptedModel(fn=_slow(1.5))
    runner = gateway_runner(tmp_path, model)
    served = serve_gateway(tmp_path, runner, {"busy": busy, "platforms": _api()})
    results: dict[str, Any] = {}
    session = {"X-Hermes-Session-Id": "session_shared01"}

    def ask(name: str) -> None:
        try:
            answer = _client(served).chat.completions.create(
                model="m", messages=[{"role": "user", "content": name}], extra_headers=session
            )
            results[name] = answer.choices[0].message.content
        except openai.APIStatusError as exc:
            results[name] = exc.status_code

    try:
        first = threading.Thread(target=ask, args=("first",))
        first.start()
        assert wait_until(lambda: len(model.requests) == 1)
        second = threading.Thread(target=ask, args=("second",))
        second.start()
        first.join(30)
        second.join(30)
    finally:
        served.stop()
    if busy == "queue":
        assert results == {"first": "answer to first", "second": "answer to second"}
        assert [m["role"] for m in model.last_request.messages[-3:]] == [
            "user",
            "assistant",
            "user",
        ]
    else:
        assert results == {"first": 409, "second": "answer to second"}


def test_a_failed_turn_is_an_error_the_sdk_does_not_retry(tmp_path):
    import openai

    error = {"error": {"status": 400, "message": "bad model input"}}
    with FakeLLM(error, error, "unused") as server:
        runner = gateway_runner(tmp_path, config=_fake_llm_config(server))
        served = serve_gateway(tmp_path, runner, {"platforms": _api()})
        try:
            client = openai.OpenAI(
                base_url=served.gateway.adapters["api"].url, api_key=KEY, max_retries=2
            )
            with pytest.raises(openai.InternalServerError, match="bad model input"):
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}]
                )
            with pytest.raises(openai.InternalServerError):
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True
                )
        finally:
            served.stop()
    assert len(server.model_requests) == 2  # one per request: the SDK did not run it again


# --- the webhook ------------------------------------------------------------------------------


def _hook(receiver: Receiver, **extra: Any) -> dict[str, Any]:
    return {
        "hooks": {
            "adapter": "webhook",
            "port": 0,
            "secret": SECRET,
            "deliver_url": receiver.url,
            "allowed_users": ["alice"],
            **extra,
        }
    }


def _post(served: GatewayThread, body: dict[str, Any], signature: str | None = "good") -> int:
    import urllib.error
    import urllib.request

    from hermes_gateway.webhook import sign

    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if signature == "good":
        headers["X-Hermes-Signature"] = sign(SECRET, data)
    elif signature is not None:
        headers["X-Hermes-Signature"] = signature
    request = urllib.request.Request(
        served.gateway.adapters["hooks"].url, data=data, headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_webhook_runs_signed_messages_and_posts_signed_answers(tmp_path, receiver):
    from hermes_gateway.webhook import sign

    model = ScriptedModel(tool_call("touch", {"name": "w"}), "done by webhook")
    runner = gateway_runner(tmp_path, model)
    served = serve_gateway(tmp_path, runner, {"platforms": _hook(receiver)})
    try:
        body = {"chat_id": "c1", "user_id": "alice", "text": "touch w", "message_id": "m1"}
        assert _post(served, body) == 202
        [answer] = receiver.wait_for(1)
    finally:
        served.stop()
    assert answer["text"] == "done by webhook" and answer["chat_id"] == "c1"
    assert answer["reply_to"] == "m1" and answer["platform"] == "hooks"
    headers, raw = receiver.posts[-1]
    assert headers["x-hermes-signature"] == sign(SECRET, raw)
    assert (tmp_path / "canary-w").exists()


@pytest.mark.parametrize("signature", [None, "sha256=00", "sha256=" + "a" * 64, ""])
def test_webhook_without_a_valid_signature_runs_nothing(tmp_path, receiver, signature):
    model = ScriptedModel(tool_call("touch", {"name": "bad"}), "should not run")
    runner = gateway_runner(tmp_path, model)
    served = serve_gateway(tmp_path, runner, {"platforms": _hook(receiver)})
    try:
        body = {"chat_id": "c1", "user_id": "alice", "text": "touch bad"}
        assert _post(served, body, signature) == 401
        assert _post(served, {**body, "user_id": "mallory"}) == 403  # signed, not allowed
    finally:
        served.stop()
    assert model.requests == [] and receiver.posts == []
    assert not (tmp_path / "canary-bad").exists()


def test_webhook_refuses_to_start_without_a_secret(tmp_path, receiver, monkeypatch):
    monkeypatch.delenv("HERMES_WEBHOOK_SECRET", raising=False)
    runner = gateway_runner(tmp_path, ScriptedModel())
    config = _hook(receiver)
    del config["hooks"]["secret"]
    with pytest.raises(HermesError, match="needs a secret"):
        serve_gateway(tmp_path, runner, {"platforms": config})


# --- sessions, commands, busy policies, restarts -----------------------------------------------


def test_sessions_are_per_user_commands_work_and_survive_a_restart(tmp_path, receiver):
    model = ScriptedModel(fn=lambda request: f"echo {request.messages[-1]['content'][:12]}")
    runner = gateway_runner(tmp_path, model)
    platforms = _hook(receiver, allowed_users=["alice", "bob"])
    served = serve_gateway(tmp_path, runner, {"platforms": platforms})
    try:
        _post(served, {"chat_id": "g", "user_id": "alice", "text": "from alice"})
        receiver.wait_for(1)
        _post(served, {"chat_id": "g", "user_id": "bob", "text": "from bob"})
        receiver.wait_for(2)
        _post(served, {"chat_id": "g", "user_id": "alice", "text": "/status"})
        status = receiver.wait_for(3)[-1]["text"]
    finally:
        served.stop()
    alice_session = status.split("Session: ")[1].split()[0]
    assert "idle" in status and alice_session.startswith("session_")
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    assert len(store.list_sessions()) == 2  # alice and bob each have their own
    # a new gateway on the same home continues alice's conversation
    served = serve_gateway(tmp_path, runner, {"platforms": platforms})
    try:
        _post(served, {"chat_id": "g", "user_id": "alice", "text": "still me"})
        receiver.wait_for(4)
        texts = [m["content"] for m in model.last_request.messages if m["role"] == "user"]
        assert texts[0].startswith("from alice") and texts[-1].startswith("still me")
        _post(served, {"chat_id": "g", "user_id": "alice", "text": "/new"})
        assert receiver.wait_for(5)[-1]["text"].startswith("Started a new conversation")
        _post(served, {"chat_id": "g", "user_id": "alice", "text": "fresh"})
        receiver.wait_for(6)
        texts = [m["content"] for m in model.last_request.messages if m["role"] == "user"]
        assert len(texts) == 1 and texts[0].startswith("fresh")
    finally:
        served.stop()
    assert len(store.list_sessions()) == 3


def _slow(seconds: float) -> Any:
    def answer(request: Any) -> Any:
        prompt = request.messages[-1]["content"].split("\n")[-1]
        if request.cancel.wait(seconds):
            raise ProviderError("cancelled")
        return f"answer to {prompt}"

    return answer


def test_busy_queue_answers_every_message_in_order(tmp_path, receiver):
    model = ScriptedModel(fn=_slow(0.4))
    runner = gateway_runner(tmp_path, model)
    served = serve_gateway(tmp_path, runner, {"busy": "queue", "platforms": _hook(receiver)})
    try:
        for text in ("one", "two", "three"):
            assert _post(served, {"chat_id": "c", "user_id": "alice", "text": text}) == 202
        answers = receiver.wait_for(3)
    finally:
        served.stop()
    assert [a["text"] for a in answers] == ["answer to one", "answer to two", "answer to three"]
    user_turns = [m["content"] for m in model.last_request.messages if m["role"] == "user"]
    assert [t.split("\n")[0] for t in user_turns] == ["one", "two", "three"]


def test_busy_interrupt_stops_the_running_turn(tmp_path, receiver):
    model = ScriptedModel(fn=_slow(3))
    runner = gateway_runner(tmp_path, model)
    config = {"busy": "interrupt", "platforms": _hook(receiver)}
    served = serve_gateway(tmp_path, runner, config)
    try:
        _post(served, {"chat_id": "c", "user_id": "alice", "text": "slow one"})
        assert wait_until(lambda: len(model.requests) == 1)
        started = time.monotonic()
        _post(served, {"chat_id": "c", "user_id": "alice", "text": "newer"})
        answers = receiver.wait_for(1, timeout=10)
        time.sleep(0.3)
    finally:
        served.stop()
    # the interrupted turn's message stays in the transcript, joined with the newer one
    assert model.last_request.messages[-1]["content"] == "slow one\n\nnewer"
    assert [a["text"] for a in receiver.events("message")] == ["answer to newer"]
    assert time.monotonic() - started < 5.5  # the first turn did not run its 3 s out
    assert answers


def test_stop_interrupts_and_status_reports(tmp_path, receiver):
    model = ScriptedModel(fn=_slow(5))
    runner = gateway_runner(tmp_path, model)
    served = serve_gateway(tmp_path, runner, {"platforms": _hook(receiver)})
    try:
        _post(served, {"chat_id": "c", "user_id": "alice", "text": "long job"})
        assert wait_until(lambda: len(model.requests) == 1)
        _post(served, {"chat_id": "c", "user_id": "alice", "text": "/status"})
        assert "a turn is running" in receiver.wait_for(1)[0]["text"]
        _post(served, {"chat_id": "c", "user_id": "alice", "text": "/stop"})
        assert receiver.wait_for(2)[1]["text"] == "Stopped."
        assert wait_until(lambda: served.gateway.running_turns == 0)
        _post(served, {"chat_id": "c", "user_id": "alice", "text": "/stop"})
        assert receiver.wait_for(3)[2]["text"] == "Nothing is running."
    finally:
        served.stop()
    assert len(receiver.events("message")) == 3  # the stopped turn sent no answer


def test_streaming_edits_the_answer_as_it_grows(tmp_path, receiver):
    def streamed(request: Any) -> Any:
        return Turn(text="a fairly long answer, streamed in pieces", delay=0.0)

    model = ScriptedModel(fn=streamed)
    runner = gateway_runner(tmp_path, model)
    config = {"edit_interval": 0.05, "platforms": _hook(receiver, stream=True)}
    served = serve_gateway(tmp_path, runner, config)
    try:
        _post(served, {"chat_id": "c", "user_id": "alice", "text": "go"})
        [first] = receiver.wait_for(1)
        assert wait_until(
            lambda: (
                (receiver.events("edit") or [first])[-1]["text"]
                == "a fairly long answer, streamed in pieces"
            )
        )
    finally:
        served.stop()
    for edit in receiver.events("edit"):
        assert edit["message_id"] == first["message_id"]


def test_a_turn_that_ends_during_the_first_streamed_send_sends_one_message(tmp_path, receiver):
    # the turn is over while the platform is still taking the first piece: that send is let
    # finish, and the whole answer goes out as its edit, never as a second message
    receiver.answer_delay = 0.6

    def answer(request: Any) -> Any:
        request.emit("text_delta", text="thinking... ")  # its send starts now
        time.sleep(0.2)
        return Turn(text="the whole answer, streamed")

    model = ScriptedModel(fn=answer)
    runner = gateway_runner(tmp_path, model)
    config = {"edit_interval": 0.05, "platforms": _hook(receiver, stream=True)}
    served = serve_gateway(tmp_path, runner, config)
    try:
        _post(served, {"chat_id": "c", "user_id": "alice", "text": "go"})
        [first] = receiver.wait_for(1)
        assert wait_until(
            lambda: (receiver.events("edit") or [first])[-1]["text"] == "the whole answer, streamed"
        )
        receiver.answer_delay = 0.0
    finally:
        served.stop()
    assert len(receiver.events("message")) == 1


def test_one_gateway_serves_the_api_and_the_webhook_at_once(tmp_path, receiver):
    model = ScriptedModel(fn=_slow(0.5))
    runner = gateway_runner(tmp_path, model)
    platforms = {**_api(), **_hook(receiver)}
    served = serve_gateway(tmp_path, runner, {"platforms": platforms})
    try:
        assert _post(served, {"chat_id": "c", "user_id": "alice", "text": "via hook"}) == 202
        answer = _client(served).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "via api"}]
        )
        [hooked] = receiver.wait_for(1)
    finally:
        served.stop()
    assert answer.choices[0].message.content == "answer to via api"
    assert hooked["text"] == "answer to via hook"
    sources = {s.source for s in SQLiteSessionStore(tmp_path / "sessions.db").list_sessions()}
    assert sources == {"api", "hooks"}


# --- shutdown and the outbox -------------------------------------------------------------------


def test_stopping_waits_for_the_running_turn(tmp_path, receiver):
    model = ScriptedModel(fn=_slow(1.0))
    runner = gateway_runner(tmp_path, model)
    served = serve_gateway(tmp_path, runner, {"platforms": _hook(receiver)})
    _post(served, {"chat_id": "c", "user_id": "alice", "text": "finish me"})
    assert wait_until(lambda: len(model.requests) == 1)
    served.stop()
    assert served.interrupted == 0
    assert [a["text"] for a in receiver.events("message")] == ["answer to finish me"]
    [session] = SQLiteSessionStore(tmp_path / "sessions.db").list_sessions()
    messages = SQLiteSessionStore(tmp_path / "sessions.db").get_messages(session.id)
    assert messages[-1]["content"] == "answer to finish me"


def test_cron_outbox_messages_are_delivered(tmp_path, receiver):
    outbox = tmp_path / "cron" / "outbox"
    outbox.mkdir(parents=True)
    for n, platform in enumerate(["hooks", "elsewhere"]):
        (outbox / f"m{n}.json").write_text(
            json.dumps({"id": f"m{n}", "platform": platform, "chat_id": "ops", "text": f"job {n}"})
        )
    runner = gateway_runner(tmp_path, ScriptedModel())
    served = serve_gateway(tmp_path, runner, {"outbox_interval": 0.1, "platforms": _hook(receiver)})
    try:
        [message] = receiver.wait_for(1)
        assert wait_until(lambda: not (outbox / "m0.json").exists())
    finally:
        served.stop()
    assert (message["chat_id"], message["text"]) == ("ops", "job 0")
    assert (outbox / "m1.json").exists()  # another gateway's platform: left queued


def test_a_persons_job_is_delivered_only_to_a_chat_of_theirs(tmp_path, receiver):
    outbox = tmp_path / "cron" / "outbox"
    outbox.mkdir(parents=True)
    for name, chat in (("own", "U1"), ("theirs", "U2"), ("room", "ops")):
        message = {"id": name, "platform": "hooks", "chat_id": chat, "text": f"for {chat}"}
        (outbox / f"{name}.json").write_text(json.dumps({**message, "person": "alice"}))
    runner = gateway_runner(tmp_path, ScriptedModel())
    settings = {
        "outbox_interval": 0.1,
        "platforms": _hook(receiver),
        "users": {"alice": {"ids": ["hooks:U1"]}, "bob": {"ids": ["hooks:U2"]}},
    }
    served = serve_gateway(tmp_path, runner, settings)
    try:
        [message] = receiver.wait_for(1)
        assert wait_until(lambda: (outbox / "theirs.json.refused").exists())
        assert wait_until(lambda: (outbox / "room.json.refused").exists())
    finally:
        served.stop()
    assert (message["chat_id"], message["text"]) == ("U1", "for U1")
    assert len(receiver.events("message")) == 1  # bob's chat and a room alice never used: none


# --- hermes gateway run, in a real process ----------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _write_home(home: Path, server: Any, port: int, key: str | None = KEY) -> dict[str, str]:
    api = {"adapter": "api_server", "port": port, "allow_all": True}
    if key:
        api["key"] = key
    config = {
        **_fake_llm_config(server),
        "agent": {"api_max_retries": 0},
        "toolsets": ["todo"],
        "gateway": {"drain_timeout": 30, "platforms": {"api": api}},
    }
    (home / "config.yaml").write_text(json.dumps(config))
    env = isolated_environ(home)
    env.pop("HERMES_API_SERVER_KEY", None)
    return env


def _hermes(env: dict[str, str], *args: str) -> subprocess.Popen:
    code = "import sys; from hermes_core.cli import main; sys.exit(main())"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_gateway_run_without_a_key_says_so_in_one_line(tmp_path):
    with FakeLLM() as server:
        env = _write_home(tmp_path, server, _free_port(), key=None)
        process = _hermes(env, "gateway", "run")
        out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "needs a key: set HERMES_API_SERVER_KEY" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1, err  # no "gateway: stopped" for one that never started


def test_sigterm_finishes_the_running_turn_and_exits_cleanly(tmp_path):
    import openai

    with FakeLLM({"text": "slow but complete", "delay": 1.5}) as server:
        port = _free_port()
        process = _hermes(_write_home(tmp_path, server, port), "gateway", "run")
        try:
            client = openai.OpenAI(
                base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0, timeout=30
            )
            assert wait_until(lambda: _listening(port), timeout=30), process.stderr
            result: dict[str, Any] = {}

            def ask() -> None:
                result["answer"] = client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "take your time"}]
                )

            asker = threading.Thread(target=ask)
            asker.start()
            assert wait_until(lambda: len(server.model_requests) == 1, timeout=30)
            process.send_signal(signal.SIGTERM)
            asker.join(30)
            _, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert result["answer"].choices[0].message.content == "slow but complete"
    assert process.returncode == 0, err
    assert "waiting for 1 running turn" in err and "gateway: stopped" in err
    [session] = SQLiteSessionStore(tmp_path / "sessions.db").list_sessions()
    messages = SQLiteSessionStore(tmp_path / "sessions.db").get_messages(session.id)
    assert messages[-1]["content"] == "slow but complete"


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_while_serving_the_long_lived_objects_are_out_of_the_collectors_way(tmp_path):
    import gc

    gc.unfreeze()
    runner = gateway_runner(tmp_path, ScriptedModel(fn=lambda request: "ok"))
    served = serve_gateway(tmp_path, runner, {"platforms": _api()})
    try:
        at_start = gc.get_freeze_count()
        assert at_start > 0
        _client(served).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
        # the first turn's new long-lived objects (the SDK's, here the client's) are frozen too
        assert wait_until(lambda: gc.get_freeze_count() > at_start)
    finally:
        served.stop()
    assert gc.get_freeze_count() == 0  # handed back once no gateway serves


def test_the_freeze_can_be_turned_off(tmp_path):
    import gc

    gc.unfreeze()
    runner = gateway_runner(tmp_path, ScriptedModel(fn=lambda request: "ok"))
    served = serve_gateway(tmp_path, runner, {"platforms": _api(), "gc_freeze": False})
    try:
        _client(served).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
        assert gc.get_freeze_count() == 0
    finally:
        served.stop()


def test_gc_freeze_must_be_a_flag():
    with pytest.raises(GatewaySettingsError, match=r"gateway.gc_freeze must be true or false"):
        load_settings({"gateway": {"gc_freeze": "yes"}})


def test_each_user_gets_a_workspace_of_their_own(tmp_path, receiver):
    seen: list[AgentTask] = []

    class Recording:
        def run(self, task: AgentTask) -> AgentOutcome:
            seen.append(task)
            return AgentOutcome(session_id=task.session_id or "s", text="ok", status="completed")

    platforms = _hook(receiver, allowed_users=["alice", "bob", "a/b", "a_b"])
    factories = {e.get("adapter", n): (lambda name, options: None) for n, e in platforms.items()}
    gateway = build(tmp_path, {"gateway": {"platforms": platforms}}, Recording(), factories, print)
    assert gateway.workspace_root == tmp_path / "workspaces"
    folders = [
        gateway.workspace_overrides(_message(user))["terminal"]["cwd"]
        for user in ("alice", "bob", "a/b", "a_b", "alice")
    ]
    assert len(set(folders)) == 4 and folders[0] == folders[4]
    for folder in folders:
        assert Path(folder).parent == tmp_path / "workspaces" and Path(folder).is_dir()
    shared = build(
        tmp_path,
        {"gateway": {"platforms": platforms, "workspaces": "shared"}},
        Recording(),
        factories,
        print,
    )
    assert shared.workspace_overrides(_message("alice")) == {}
    with pytest.raises(HermesError, match="gateway.workspaces"):
        build(
            tmp_path,
            {"gateway": {"platforms": platforms, "workspaces": "x"}},
            Recording(),
            factories,
            print,
        )


def _message(user: str) -> InboundMessage:
    return InboundMessage(platform="hook", chat_id="c", user_id=user, text="hi")


def _leave_after(port: int, body: dict[str, Any], wait_for: Callable[[bytes], bool]) -> bytes:
    """POST a streamed chat completion, read until ``wait_for(received)``, then hang up."""
    payload = json.dumps(body).encode()
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {KEY}\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        conn.settimeout(0.1)
        deadline = time.monotonic() + 30
        while not wait_for(received) and time.monotonic() < deadline:
            try:
                chunk = conn.recv(4096)
            except TimeoutError:
                continue
            if not chunk:
                break
            received += chunk
    return received


def test_clients_that_leave_early_or_mid_stream_leave_no_traceback(tmp_path):
    with FakeLLM(
        {"hang": True},  # the first client leaves before any text
        {"text": "one two three four five six", "chunks": 6, "chunk_delay": 0.5},
    ) as server:
        port = _free_port()
        process = _hermes(_write_home(tmp_path, server, port), "gateway", "run")
        try:
            assert wait_until(lambda: _listening(port), timeout=30)
            body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
            got = _leave_after(port, body, lambda got: len(server.model_requests) >= 1)
            assert got == b""  # nothing was sent before the client left
            time.sleep(1.0)  # the gateway notices the closed connection
            got = _leave_after(port, body, lambda got: b"one" in got)
            assert b"one" in got
            time.sleep(1.5)
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert "Traceback" not in err and "Error handling request" not in err, err
    assert "exception was never retrieved" not in err, err
    assert "waiting for 0 running turn" in err  # both turns ended with their clients


@pytest.mark.parametrize("leaves", ["during the model call", "while a tool runs"])
def test_a_client_that_leaves_before_any_text_ends_its_turn_there(tmp_path, leaves):
    """No tool runs after the client left and no further model call is made: the turn is
    interrupted where it stands."""
    marker = tmp_path / "MARKER"
    during_call = leaves == "during the model call"
    first = {"name": "terminal", "arguments": {"command": "sleep 0" if during_call else "sleep 2"}}
    second = {"name": "terminal", "arguments": {"command": f"touch {marker}"}}
    with FakeLLM(
        {"calls": [first], "delay": 2.0 if during_call else 0},
        {"calls": [second]},
        {"text": "never asked for"},
    ) as server:
        port = _free_port()
        env = _write_home(tmp_path, server, port)
        config = json.loads((tmp_path / "config.yaml").read_text())
        config.update(toolsets=["terminal"], terminal={"sandbox": "off"})
        (tmp_path / "config.yaml").write_text(json.dumps(config))
        process = _hermes(env, "gateway", "run")
        try:
            assert wait_until(lambda: _listening(port), timeout=30)
            body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
            started = time.monotonic()
            got = _leave_after(
                port,
                body,
                lambda got: len(server.model_requests) >= 1 and time.monotonic() > started + 0.5,
            )
            assert b"data:" not in got  # no text had come
            time.sleep(5.0)  # past the delayed answer, the first tool and any call after it
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert len(server.model_requests) == 1, err
    assert not marker.exists()
    assert "Traceback" not in err, err
