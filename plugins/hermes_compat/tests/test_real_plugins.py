"""Real plugins written for the Hermes agent, pinned, downloaded from the package registry at test
time and installed unchanged into a folder put on the path of a real ``hermes`` process, driven
by the fake LLM server: their tools are listed and called, their guard blocks, their hooks fire.

Skipped (with the reason) only when the registry cannot be reached.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core.testing import FakeLLM, text, tool_call

PINNED = {
    "hermes-sfw": "0.2.16",
    "noisegate-hermes": "0.3.3",
    "hermes-llm-api-call-logger": "1.1.3",
    "creedspace-hermes": "0.1.0",
    "hermes-plugin-guard": "0.2.1",
}
"""Distribution -> version; docs/hermes-plugins.md says what works in each."""

KEYS = ["hermes-sfw", "noisegate", "llm-api-call-logger", "creedspace", "hermes-plugin-guard"]
"""Their entry point names: what ``plugins.enabled`` lists."""

NOISY = 'for i in $(seq 0 399); do echo "line $i: compiling module number $i ... ok"; done'


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the pinned plugins installed (``pip install --no-deps --target``)."""
    cache = tmp_path_factory.mktemp("download-cache")
    for name, version in PINNED.items():
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
             "-q", "-d", str(cache), f"{name}=={version}"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode != 0:
            if "No matching distribution" in done.stderr:
                pytest.fail(f"{name}=={version} is not on the registry: {done.stderr[-300:]}")
            pytest.skip(f"the package registry cannot be reached: {done.stderr.strip()[-300:]}")
    target = tmp_path_factory.mktemp("site")
    wheels = sorted(str(p) for p in cache.iterdir())
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
         "-q", "--target", str(target), *wheels],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return target


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A hermes home enabling the five plugins, with one more folder plugin left disabled."""
    home = tmp_path / "home"
    sleepy = home / "plugins" / "sleepy"
    sleepy.mkdir(parents=True)
    (sleepy / "plugin.yaml").write_text("name: sleepy\nversion: '0.1'\n", encoding="utf-8")
    (sleepy / "__init__.py").write_text("def register(ctx):\n    pass\n", encoding="utf-8")
    (home / "workdir").mkdir()
    return home


def _configure(home: Path, base_url: str = "http://127.0.0.1:9/v1") -> None:
    (home / "config.yaml").write_text(
        "plugins:\n"
        f"  enabled: [{', '.join(KEYS)}]\n"
        "model:\n"
        "  provider: custom\n"
        f"  base_url: {base_url}\n"
        "  default: m\n"
        "terminal:\n"
        f"  cwd: {home / 'workdir'}\n",
        encoding="utf-8",
    )


def _hermes(home: Path, site: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(
        HERMES_HOME=str(home),
        PYTHONPATH=os.pathsep.join([str(site), env.get("PYTHONPATH", "")]),
        CUSTOM_API_KEY="test-key",
        LLM_API_CALL_DATA_DIR=str(home / "llm-log"),
        HERMES_SFW_ENFORCE_DIRECT="1",
    )
    return subprocess.run(
        [sys.executable, "-c", "import sys, hermes_core.cli as c; sys.exit(c.main())", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_plugins_list_shows_each_plugin_and_what_it_provides(site: Path, home: Path) -> None:
    _configure(home)
    run = _hermes(home, site, "plugins", "list")
    assert run.returncode == 0, run.stderr
    for key, version in zip(KEYS, ["0.2.16", "0.3.3", "1.1.3", "0.1.0", "0.2.1"], strict=True):
        [row] = [line for line in run.stdout.splitlines() if line.split()[:1] == [key]]
        assert row.split()[1:] == [version, "via", "hermes-agent-compat", "loaded", "-"], row
    out = run.stdout
    assert (
        "hermes-sfw: provides tool sfw, hook pre_tool_call, hook transform_terminal_output" in out
    )
    assert "creedspace: note: register_middleware: not honoured" in out
    assert "llm-api-call-logger: provides hook pre_api_request, hook post_api_request" in out
    assert "hermes-plugin-guard: provides tool plugin_guard_review_candidate" in out
    assert "sleepy: skipped: not enabled" in out
    tools = _hermes(home, site, "tools", "list").stdout
    assert "sfw" in tools and "plugin_guard_review_candidate" in tools


def test_a_chat_calls_their_tools_and_their_guard_and_hooks_act(site: Path, home: Path) -> None:
    script = [
        tool_call("terminal", {"command": "pip install requests"}),
        tool_call("sfw", {"action": "status"}),
        tool_call("terminal", {"command": NOISY}),
        tool_call("plugin_guard_review_candidate", {"candidate": "sleepy"}),
        text("All done."),
    ]
    with FakeLLM(*script) as llm:
        _configure(home, llm.openai_base_url)
        run = _hermes(home, site, "chat", "-q", "Install requests, then build.", "--yolo")
        requests = [r.json for r in llm.requests]
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "All done."
    assert len(requests) == 5
    results = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    blocked, status, build, review = results

    # hermes-sfw: its pre_tool_call guard refused the raw pip install; its tool answered
    assert blocked.startswith("BLOCKED:") and "(rule hermes-plugin:" in blocked
    assert "direct package-manager operation blocked by hermes-sfw" in blocked
    assert "(rule hermes-plugin:hermes-sfw)" in blocked
    assert not (home / "workdir" / "requests").exists()
    assert "sfw" in status.lower() and not status.startswith("Error")

    # noisegate: transform_terminal_output compacted the 400-line build log
    assert len(build) < 6000 and "line 0: compiling module number 0 ... ok" in build
    assert build.rstrip().splitlines()[-1].startswith("[exit code: 0;")

    # hermes-plugin-guard: its tool reviewed the disabled folder plugin
    assert json.loads(review)  # a JSON answer
    assert "sleepy" in review

    # creedspace: pre_llm_call put the constitution into the user message of every request
    for body in requests:
        user = [m for m in body["messages"] if m["role"] == "user"][-1]
        assert user["content"].startswith("Install requests, then build.\n\n<creed-space-")

    # llm-api-call-logger: pre/post_api_request recorded each model call; on_session_end flushed
    with sqlite3.connect(home / "llm-log" / "llm-call-log.db") as db:
        rows = db.execute("SELECT model, finish_reason FROM llm_api_calls").fetchall()
    assert len(rows) == 5 and rows[-1][1] == "stop"
    calls = _hermes(home, site, "agent-plugins", "command", "calls", "status")
    assert calls.returncode == 0 and "| Records | 5 |" in calls.stdout


def test_their_cli_command_runs_with_its_argparse_set_up(site: Path, home: Path) -> None:
    _configure(home)
    shown = _hermes(home, site, "plugin-guard", "--help")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: hermes plugin-guard")
    scan = _hermes(home, site, "plugin-guard", "scan", str(home / "plugins" / "sleepy"))
    assert scan.returncode == 0, scan.stderr
    assert "Scanned 1 plugin(s)" in scan.stdout and "Result: PASS" in scan.stdout
