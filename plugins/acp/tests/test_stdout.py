"""stdout carries protocol frames and nothing else, even when a plugin prints, writes to file
descriptor 1, warns or logs in the middle of a turn; the logs go to stderr."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from acp_client import HERMES, hermes_env, install_plugin
from frames import SchemaCheck

from hermes_core.testing import FakeLLM, text, tool_call

NOISY = """
import logging, os, sys, warnings
from hermes_hookspecs import hookimpl

@hookimpl
def hermes_pre_tool_call(call, context):
    print("a plugin prints to stdout")
    sys.stdout.write("and writes to sys.stdout\\n")
    sys.stdout.flush()
    os.write(1, b"and writes to file descriptor 1\\n")
    warnings.warn("a plugin warns")
    logging.getLogger("noisy").warning("a plugin logs")
    return None
"""


def test_stdout_holds_only_protocol_frames(
    home: Path, llm: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("A\n", encoding="utf-8")
    llm.add(tool_call("read_file", {"path": "a.txt"}), text("it says A"))
    plugin = install_plugin(tmp_path / "site", "noisy", NOISY)
    env = hermes_env(home)
    env["HERMES_PLUGINS"] += ",noisy"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [plugin, env.get("PYTHONPATH")]))
    sent: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": str(workspace), "mcpServers": []},
        },
    ]
    proc = subprocess.Popen(
        [HERMES, "acp"],
        env=env,
        cwd=workspace,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[str] = []
    try:
        for frame in sent:
            proc.stdin.write(json.dumps(frame) + "\n")
        proc.stdin.flush()
        while len(lines) < 2:
            lines.append(proc.stdout.readline())
        session_id = json.loads(lines[1])["result"]["sessionId"]
        prompt = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "read"}]},
        }
        sent.append(prompt)
        proc.stdin.write(json.dumps(prompt) + "\n")
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            assert line, "hermes acp ended before answering the prompt"
            lines.append(line)
            if json.loads(line).get("id") == 2:
                break
    finally:
        rest, stderr = proc.communicate(timeout=30)
    lines += rest.splitlines(keepends=True)
    frames = [json.loads(line) for line in lines if line.strip()]  # each line is JSON
    SchemaCheck().agent_frames(sent, frames)
    assert frames[-1]["result"]["stopReason"] == "end_turn"
    for noise in ("prints to stdout", "sys.stdout", "file descriptor 1", "warns", "logs"):
        assert noise in stderr
    assert proc.returncode == 0
