"""An editor's trace continues into hermes: a ``session/prompt`` whose ``_meta`` carries a W3C
``traceparent`` makes the turn of a real ``hermes acp`` (driven by the protocol's official SDK)
a child of that span, as the spans exported to a local OTLP receiver show."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import FakeLLM

acp = pytest.importorskip("acp")
pytest.importorskip("hermes_frontend_acp")

HERMES = shutil.which("hermes", path=os.path.dirname(sys.executable)) or "hermes"
TRACE_ID = "5bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "10f067aa0ba902b7"


class Client:
    """An editor that records nothing and allows nothing."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no permission expected")

    def on_connect(self, conn: Any) -> None:
        return None


def test_a_prompts_meta_traceparent_is_the_turns_parent(
    tmp_path: Path, server: FakeLLM, collector: Any
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        "model:\n  default: fake-model\n  provider: custom\n"
        f"  base_url: {server.openai_base_url}\n"
        "toolsets: []\n"
        f"tracing:\n  enabled: true\n  endpoint: {collector.url}\n",
        encoding="utf-8",
    )
    server.add("hello from acp")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OTEL_"))}
    env.update(HERMES_HOME=str(home), HERMES_PLUGINS="acp,openai,tracing")

    async def go() -> str:
        async with acp.spawn_agent_process(Client(), HERMES, "acp", env=env, cwd=str(home)) as (
            conn,
            _process,
        ):
            await asyncio.wait_for(conn.initialize(protocol_version=1), 30)
            new = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            done = await conn.prompt(
                session_id=new.session_id,
                prompt=[acp.text_block("hi")],
                traceparent=f"00-{TRACE_ID}-{PARENT_ID}-01",
            )
            return str(done.stop_reason)

    assert asyncio.run(asyncio.wait_for(go(), 60)) == "end_turn"
    spans = collector.wait_for_spans(2)  # flushed when the process leaves
    [root] = [s for s in spans if s["name"] == "invoke_agent hermes"]
    assert root["trace_id"] == TRACE_ID and root["parent"] == PARENT_ID
    assert root["attributes"]["hermes.source"] == "acp"
    [chat] = [s for s in spans if s["name"] == "chat fake-model"]
    assert chat["parent"] == root["span_id"]
