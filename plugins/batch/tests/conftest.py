"""Fixtures of the batch tests: a fake LLM server whose answer depends on the row's prompt
only (so runs are comparable whatever order rows run in), a home whose model is that server,
datasets, and ``hermes`` in real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import FakeLLM

HERMES = "import sys; from hermes_core.cli import main; sys.exit(main())"


def _first_user_text(body: dict[str, Any]) -> str:
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def scripted_answer(request: Any, delay: float = 0.0) -> Any:
    """The fake model: a prompt with ``FAIL`` gets a provider error; ``TOOL`` makes one
    ``todo`` call and then answers; ``GHOST`` calls a tool that does not exist; ``THINK``
    answers with reasoning; ``TERMINAL CMD`` runs CMD with the terminal tool and answers with
    what it saw; anything else is answered at once. ``SLOW`` rows take 1.5 s, ``LONG`` rows 8 s,
    ``HANG`` rows 30 s."""
    body = request.json or {}
    messages = body.get("messages") or []
    prompt = _first_user_text(body)
    marker = prompt.split("PROMPT:", 1)[-1].strip()
    pause = delay + (1.5 if "SLOW" in prompt else 0.0) + (30.0 if "HANG" in prompt else 0.0)
    pause += 8.0 if "LONG" in prompt else 0.0
    if "FAIL" in prompt:
        return {"error": {"status": 400, "message": f"cannot answer {marker}"}, "delay": pause}
    answered_tool = bool(messages) and messages[-1].get("role") == "tool"
    usage = {"input_tokens": 100, "output_tokens": 10}
    if "TOOL" in prompt and not answered_tool:
        return {
            "calls": [
                {
                    "name": "todo",
                    "arguments": {"todos": [{"id": "1", "content": marker, "status": "pending"}]},
                    "id": "call_1",
                }
            ],
            "usage": usage,
            "delay": pause,
        }
    if prompt.startswith("TERMINAL ") and not answered_tool:
        command = prompt.removeprefix("TERMINAL ")
        call = {"name": "terminal", "arguments": {"command": command}, "id": "call_1"}
        return {"calls": [call], "usage": usage, "delay": pause}
    if prompt.startswith("TERMINAL ") and answered_tool:
        return {"text": f"saw: {messages[-1].get('content')}", "usage": usage}
    if "GHOST" in prompt and not answered_tool:
        return {
            "calls": [{"name": "no_such_tool", "arguments": {}, "id": "call_1"}],
            "usage": usage,
            "delay": pause,
        }
    answer: dict[str, Any] = {"text": f"answer to {marker}", "usage": usage, "delay": pause}
    if "THINK" in prompt:
        answer["reasoning"] = f"thinking about {marker}"
    return answer


@pytest.fixture
def fake_model() -> Iterator[FakeLLM]:
    """A fake LLM answering with :func:`scripted_answer`, for as many requests as come."""
    with FakeLLM() as server:
        server.add(*[lambda r: scripted_answer(r, 0.05)] * 3000)
        yield server


def make_home(path: Path, server: FakeLLM, extra: str = "") -> dict[str, str]:
    """A hermes home in ``path`` whose model is ``server``; returns the environment that uses
    it."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.yaml").write_text(
        textwrap.dedent(f"""
        model:
          provider: custom
          base_url: {server.openai_base_url}
          default: fake-model
          api_key: test
        toolsets: [todo]
        agent: {{api_max_retries: 0}}
        """)
        + extra
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "RAY_"))}
    env["HERMES_HOME"] = str(path)
    return env


@pytest.fixture
def home(tmp_path: Path, fake_model: FakeLLM) -> tuple[Path, dict[str, str]]:
    """A home on the fake model and its environment."""
    folder = tmp_path / "home"
    return folder, make_home(folder, fake_model)


def write_dataset(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` as a JSONL dataset at ``path``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def hermes(
    *args: str, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``hermes ARGS`` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-c", HERMES, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def hermes_process(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """Start ``hermes ARGS`` in a process of its own."""
    return subprocess.Popen(
        [sys.executable, "-c", HERMES, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def kit() -> Any:
    """The helpers of these tests (``--import-mode=importlib``: test modules cannot import
    this one)."""
    import types

    return types.SimpleNamespace(
        HERMES=HERMES,
        hermes=hermes,
        hermes_process=hermes_process,
        make_home=make_home,
        write_dataset=write_dataset,
        scripted_answer=scripted_answer,
    )


# PostgreSQL: the test kit's ``postgres_database`` fixture (a fresh database per module).
