"""Images in user messages: `hermes chat --image`, paths dropped into the interactive chat, the
three wire formats through the real SDKs against the fake server, and what the session keeps
(a reference to a copy in $HERMES_HOME/images, never base64)."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hermes_core.loop import images
from hermes_core.loop.agent import Agent
from hermes_core.testing import (
    FakeLLM,
    ScriptedModel,
    assert_request_valid,
    isolated_environ,
    make_agent,
    plugin_manager,
    text,
    tool_call,
)
from hermes_hookspecs import Tool, ToolOutput, Toolset, hookimpl

pytest.importorskip("openai")
pytest.importorskip("anthropic")

# a 1x1 red PNG
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108020000009077"
    "53de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
)
DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


@pytest.fixture
def llm() -> Any:
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def picture(tmp_path: Path) -> Path:
    path = tmp_path / "red pixel.png"
    path.write_bytes(PNG)
    return path


def _agent(llm: FakeLLM, home: Path, provider: str, api_mode: str | None = None) -> Agent:
    base = llm.anthropic_base_url if provider == "anthropic" else llm.openai_base_url
    settings: dict[str, Any] = {"provider": provider, "base_url": base, "model": "vision-model"}
    if api_mode:
        settings["api_mode"] = api_mode
    return Agent.from_config(home=home, plugins=plugin_manager(["openai", "anthropic"]), **settings)


@pytest.mark.parametrize(
    ("provider", "api_mode", "expected"),
    [
        ("custom", None, {"type": "image_url", "image_url": {"url": DATA_URL}}),
        ("custom", "codex_responses", {"type": "input_image", "image_url": DATA_URL}),
        (
            "anthropic",
            None,
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/png",
                    "data": base64.b64encode(PNG).decode(),
                },
            },
        ),
    ],
    ids=["chat-completions", "responses", "anthropic-messages"],
)
def test_an_image_reaches_each_wire_format(
    llm: FakeLLM,
    hermes_home: Path,
    picture: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    api_mode: str | None,
    expected: dict[str, Any],
) -> None:
    monkeypatch.setenv("CUSTOM_API_KEY", "sk-test-000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-000000")
    llm.add(text("A red pixel."))
    with _agent(llm, hermes_home, provider, api_mode) as agent:
        assert agent.chat("What is this?", images=[picture]) == "A red pixel."
        session_id = agent.session_id
    [request] = llm.model_requests
    body = json.dumps(request.json)
    assert json.dumps(expected)[1:-1] in body, body[:2000]
    assert "What is this?" in body
    # the session keeps a reference to a copy in the home, not the image's bytes
    [copy] = (hermes_home / "images").iterdir()
    assert copy.read_bytes() == PNG and copy.suffix == ".png"
    db = sqlite3.connect(hermes_home / "sessions.db")
    rows = db.execute(
        "SELECT content, content_parts FROM messages WHERE session_id = ? AND role = 'user'",
        (session_id,),
    ).fetchall()
    db.close()
    [(content, parts)] = rows
    assert content == "What is this?"
    assert json.loads(parts)[1] == {"type": "image_url", "image_url": {"url": copy.as_uri()}}
    assert "base64" not in parts


def test_the_next_turns_send_the_image_again_and_a_missing_file_becomes_a_note(
    llm: FakeLLM, hermes_home: Path, picture: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSTOM_API_KEY", "sk-test-000000")
    llm.add(text("A red pixel."), text("Still red."), text("Gone."))
    with _agent(llm, hermes_home, "custom") as agent:
        agent.chat("What is this?", images=[picture])
        agent.chat("And now?")
        [copy] = (hermes_home / "images").iterdir()
        copy.unlink()
        agent.chat("And now?")
    first, second, third = llm.model_requests
    assert DATA_URL in json.dumps(second.json)
    assert DATA_URL not in json.dumps(third.json)
    assert "an image that is no longer available" in json.dumps(third.json)


def test_bad_images_are_refused_in_one_line(tmp_path: Path) -> None:
    text_file = tmp_path / "notes.png"
    text_file.write_text("not an image")
    with pytest.raises(Exception, match=r"notes.png: not a PNG, JPEG, GIF or WebP image"):
        images.attach(text_file, None)
    with pytest.raises(Exception, match=r"missing.png: No such file"):
        images.attach(tmp_path / "missing.png", None)


def test_dropped_paths_are_found_in_a_line(tmp_path: Path, picture: Path) -> None:
    other = tmp_path / "b.jpg"
    other.write_bytes(b"\xff\xd8\xff\xe0" + bytes(16))
    line = f"compare {str(picture).replace(' ', chr(92) + ' ')} with '{other}' please"
    text_part, found = images.dropped_images(line)
    assert found == [picture, other] and text_part == "compare with please"
    assert images.dropped_images(f"look at {picture.as_uri()}")[1] == [picture]
    assert images.dropped_images("no images here, just /etc/hosts.png")[1] == []


def test_hermes_chat_image(hermes_cli: Any, llm: FakeLLM, picture: Path) -> None:
    llm.add(text("A red pixel."))
    result = hermes_cli(
        "chat",
        "-q",
        "What is this?",
        "--image",
        str(picture),
        "--provider",
        "custom",
        "--base-url",
        llm.openai_base_url,
        "--model",
        "m",
        env={"CUSTOM_API_KEY": "sk-test-000000"},
    )
    assert result.exit_code == 0, result.stderr
    assert result.output.strip() == "A red pixel."
    assert DATA_URL in json.dumps(llm.model_requests[0].json)


def test_hermes_chat_image_errors(hermes_cli: Any, tmp_path: Path, llm: FakeLLM) -> None:
    bad = tmp_path / "x.png"
    bad.write_text("text")
    result = hermes_cli(
        "chat",
        "-q",
        "hi",
        "--image",
        str(bad),
        "--provider",
        "custom",
        "--base-url",
        llm.openai_base_url,
        "--model",
        "m",
        env={"CUSTOM_API_KEY": "sk-test-000000"},
    )
    assert result.exit_code == 1
    assert result.stderr == f"hermes: error: --image {bad}: not a PNG, JPEG, GIF or WebP image\n"
    assert llm.model_requests == []


def test_an_image_dropped_into_the_interactive_chat(
    hermes_home: Path, llm: FakeLLM, picture: Path
) -> None:
    import subprocess
    import sys

    llm.add(text("A red pixel."))
    env = isolated_environ(hermes_home)
    env["CUSTOM_API_KEY"] = "sk-test-000000"
    script = (
        "import sys, hermes_core.cli as c; sys.stdin.isatty = lambda: True;"
        " sys.exit(c.main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "chat",
            "--provider",
            "custom",
            "--base-url",
            llm.openai_base_url,
            "--model",
            "m",
            "--no-stream",
        ],
        input=f"what is {str(picture).replace(' ', chr(92) + ' ')}\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "A red pixel." in done.stdout, done.stderr
    assert "(with 1 image(s): red pixel.png)" in done.stderr
    body = json.dumps(llm.model_requests[0].json)
    assert DATA_URL in body and '"what is"' in body


# --- images in tool results -------------------------------------------------------------------


class _Painter:
    """A plugin whose tool returns text with an image."""

    def __init__(self, image: Path) -> None:
        self.image = image

    @hookimpl
    def hermes_register_toolsets(self, register: Any) -> None:
        def paint(args: dict[str, Any], ctx: Any) -> ToolOutput:
            return ToolOutput("painted a red pixel", images=[self.image, "/nonexistent/x.png"])

        register(
            Toolset(
                name="painter",
                tools=[
                    Tool(
                        name="paint",
                        description="Paint a picture",
                        parameters={"type": "object", "properties": {}},
                        handler=paint,
                    )
                ],
            )
        )


def test_a_tool_result_image_is_shown_to_the_model(hermes_home: Path, picture: Path) -> None:
    model = ScriptedModel(tool_call("paint"), text("I see a red pixel."))
    with make_agent(model=model, plugins=[_Painter(picture)], home=hermes_home, config={}) as agent:
        assert agent.chat("paint") == "I see a red pixel."
        session_id = agent.session_id
    second = model.requests[1]
    assert_request_valid(second)
    *_, call, result, shown = second.messages
    assert result["role"] == "tool" and result["content"].startswith("painted a red pixel")
    assert "1 image(s) could not be attached: /nonexistent/x.png" in result["content"]
    assert shown == {
        "role": "user",
        "content": [
            {"type": "text", "text": "The images returned by paint (call_1):"},
            {"type": "image_url", "image_url": {"url": DATA_URL}},
        ],
    }
    # the transcript keeps the path of a copy in the home, never the bytes
    [copy] = (hermes_home / "images").iterdir()
    db = sqlite3.connect(hermes_home / "sessions.db")
    [(extra,)] = db.execute(
        "SELECT extra FROM messages WHERE session_id = ? AND role = 'tool'", (session_id,)
    ).fetchall()
    db.close()
    assert json.loads(extra) == {"_images": [str(copy)]}


@pytest.mark.parametrize(
    ("provider", "api_mode", "expected"),
    [
        ("custom", None, '{"type": "image_url", "image_url": {"url": "' + DATA_URL + '"}}'),
        ("custom", "codex_responses", '{"type": "input_image", "image_url": "' + DATA_URL),
        ("anthropic", None, '"source": {"type": "base64", "media_type": "image/png"'),
    ],
    ids=["chat-completions", "responses", "anthropic-messages"],
)
def test_tool_result_images_on_each_wire_format(
    llm: FakeLLM,
    hermes_home: Path,
    picture: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    api_mode: str | None,
    expected: str,
) -> None:
    monkeypatch.setenv("CUSTOM_API_KEY", "sk-test-000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-000000")
    llm.add(tool_call("paint"), text("A red pixel."))
    base = llm.anthropic_base_url if provider == "anthropic" else llm.openai_base_url
    settings: dict[str, Any] = {"provider": provider, "base_url": base, "model": "vision-model"}
    if api_mode:
        settings["api_mode"] = api_mode
    with Agent.from_config(
        home=hermes_home,
        plugins=plugin_manager(["openai", "anthropic", _Painter(picture)]),
        **settings,
    ) as agent:
        assert agent.chat("paint") == "A red pixel."
    body = json.dumps(llm.model_requests[1].json)
    assert expected in body
    assert "The images returned by paint" in body


def test_a_model_without_vision_gets_descriptions_from_auxiliary_vision(
    llm: FakeLLM, hermes_home: Path, picture: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSTOM_API_KEY", "sk-test-000000")
    llm.add(text("A single red pixel on nothing."))
    model = ScriptedModel(tool_call("paint"), text("It is red."), "Still red.")
    config = {
        "model": {"vision": False},
        "auxiliary": {
            "vision": {"provider": "custom", "model": "eyes", "base_url": llm.openai_base_url}
        },
    }
    with make_agent(
        model=model, plugins=["openai", _Painter(picture)], home=hermes_home, config=config
    ) as agent:
        agent.chat("paint")
        agent.chat("and?")
    [described] = llm.model_requests  # described once, remembered for the next turn
    assert described.json["model"] == "eyes" and DATA_URL in json.dumps(described.json)
    for request in model.requests[1:]:
        body = json.dumps(request.messages)
        assert "data:image" not in body
        assert "A single red pixel on nothing." in body


def test_without_auxiliary_vision_the_model_is_told_the_image_is_not_shown(
    hermes_home: Path, picture: Path
) -> None:
    model = ScriptedModel(tool_call("paint"), text("ok"))
    with make_agent(
        model=model,
        plugins=[_Painter(picture)],
        home=hermes_home,
        config={"model": {"vision": False}},
    ) as agent:
        agent.chat("paint")
    shown = model.requests[1].messages[-1]["content"]
    assert (
        "not shown: this model does not take images and auxiliary.vision is not set"
        in (shown[1]["text"])
    )
