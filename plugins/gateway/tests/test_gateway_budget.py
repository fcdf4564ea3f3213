"""A gateway user past a spend cap is answered with the cap's message (what it is, what was
spent and how to raise it), and no model call is made for them."""

from __future__ import annotations

from pathlib import Path

import openai
from hermes_gateway.hookspecs import PLATFORM_ADAPTERS_HOOK
from hermes_gateway.serve import GatewayThread, build

from hermes_core.testing import ScriptedModel, Turn, make_runner
from hermes_hookspecs import Usage

KEY = "budget-test-key"


def test_a_user_past_the_cap_is_answered_with_the_caps_message(tmp_path: Path) -> None:
    answer = Turn(text="first answer", usage=Usage(input_tokens=1000, output_tokens=10))
    model = ScriptedModel(answer, "never sent")
    config = {
        "pricing": {"scripted": {"input": 1000.0, "output": 1000.0}},
        "budgets": {"session_usd": 1.5, "reserve_output_tokens": 1},  # 1000 tokens a call
        "toolsets": [],
    }
    runner = make_runner(model=model, plugins=["gateway"], home=tmp_path, config=config)
    factories = {
        name: entry.value
        for name, entry in runner.host.registry.named(PLATFORM_ADAPTERS_HOOK).items()
    }
    platforms = {"api": {"adapter": "api_server", "port": 0, "key": KEY, "allow_all": True}}
    gateway = build(tmp_path, {"gateway": {"platforms": platforms}}, runner, factories, print)
    served = GatewayThread(gateway, tmp_path).start()
    try:
        client = openai.OpenAI(
            base_url=served.gateway.adapters["api"].url, api_key=KEY, max_retries=0, timeout=30
        )
        raw = client.chat.completions.with_raw_response.create(
            model="hermes-agent", messages=[{"role": "user", "content": "hello"}]
        )
        assert raw.parse().choices[0].message.content == "first answer"
        session = raw.headers["x-hermes-session-id"]
        second = client.chat.completions.create(
            model="hermes-agent",
            messages=[{"role": "user", "content": "more"}],
            extra_headers={"X-Hermes-Session-Id": session},
        )
    finally:
        served.stop()
    reply = second.choices[0].message.content or ""
    assert reply.startswith("spend cap reached: budgets.session_usd is $1.50")
    assert "hermes config set budgets.session_usd" in reply
    assert len(model.requests) == 1
