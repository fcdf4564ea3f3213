"""Installed but off, the plugin costs nothing: a plain ``hermes chat -q`` in a fresh interpreter,
with every installed plugin loaded as a user has them, imports no OpenTelemetry module; the same
chat with the standard endpoint variable set does (so the probe can see them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hermes_core.testing import FakeLLM

PROBE = """
import json, sys
import hermes_core.cli
code = hermes_core.cli.main(["chat", "-q", "hello"])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("opentelemetry", "google"))
tracing = "hermes_tracing_otel" in sys.modules
sys.stdout.write("\\n@@PROBE@@" + json.dumps({"code": code, "loaded": loaded, "plugin": tracing}))
"""


def chat_in_a_fresh_process(home: Path, **env: str) -> dict[str, Any]:
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OTEL_", "TRACE"))
    }
    environ.update(HERMES_HOME=str(home), **env)
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=home,
    )
    assert done.returncode == 0, done.stderr
    marker = done.stdout.rfind("@@PROBE@@")
    assert marker >= 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout[marker + len("@@PROBE@@") :])
    report["stdout"] = done.stdout[:marker]
    report["stderr"] = done.stderr
    return report


def home_for(tmp_path: Path, server: FakeLLM) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        "model:\n  provider: custom\n  default: fake-model\n"
        f"  base_url: {server.openai_base_url}\n"
        "toolsets: []\n",
        encoding="utf-8",
    )
    return home


def test_a_chat_with_tracing_off_imports_no_opentelemetry(tmp_path: Path, server: FakeLLM) -> None:
    server.add("plain answer")
    report = chat_in_a_fresh_process(home_for(tmp_path, server))
    assert report["code"] == 0
    assert "plain answer" in str(report["stdout"])
    assert report["plugin"] is True, "the plugin must be installed and loaded for this to mean much"
    assert report["loaded"] == []


def test_the_same_chat_with_the_endpoint_set_imports_it(
    tmp_path: Path, server: FakeLLM, collector: Any
) -> None:
    server.add("traced answer")
    home = home_for(tmp_path, server)
    report = chat_in_a_fresh_process(home, OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
    assert report["code"] == 0
    assert "opentelemetry.sdk.trace" in str(report["loaded"])
    names = sorted(s["name"] for s in collector.wait_for_spans(2))
    assert names == ["chat fake-model", "invoke_agent hermes"]


def test_a_one_shot_chat_with_the_collector_down_exits_at_once_and_says_so(
    tmp_path: Path, server: FakeLLM
) -> None:
    import socket
    import time

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    home = home_for(tmp_path, server)
    server.add("first", "second")
    started = time.monotonic()
    chat_in_a_fresh_process(home)
    untraced = time.monotonic() - started
    started = time.monotonic()
    report = chat_in_a_fresh_process(home, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}")
    traced = time.monotonic() - started
    assert report["code"] == 0 and "second" in report["stdout"]
    # the exit does not wait tracing.exit_timeout (3 s) for a collector that is not there
    assert traced < untraced + 2.0, (traced, untraced)
    lines = [line for line in report["stderr"].splitlines() if "tracing:" in line]
    assert len(lines) == 1 and "cannot be reached" in lines[0], report["stderr"]
    assert "Traceback" not in report["stderr"]
