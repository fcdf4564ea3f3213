"""A Hermes agent folder plugin driven by the scripted model: its tools are offered and called,
its guard blocks, rewrites and asks, its hooks fire, its commands run, and what cannot work here
is reported by `hermes plugins list`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hermes_compat_agent_plugins.host import HermesPluginHost

from hermes_core.testing import load_plugin, make_agent, text, tool_call

COMPAT = "hermes-agent-compat"


def _demo() -> object:
    return sys.modules["hermes_plugins.demo"]


def _tool_results(agent: object) -> list[str]:
    return [m["content"] for m in agent.messages if m["role"] == "tool"]  # type: ignore[attr-defined]


def test_the_compat_plugin_loads_through_its_entry_point() -> None:
    record = load_plugin(COMPAT)
    assert record.dist == "hermes-compat-agent-plugins"
    assert "hermes_pre_tool_call" in record.hooks and "hermes_describe_plugins" in record.hooks


def test_tools_are_offered_and_called_with_the_hermes_calling_convention(demo_host) -> None:
    agent = make_agent(
        tool_call("shout", {"text": "hi"}),
        tool_call("async_echo", {"text": "x"}),
        text("done"),
        plugins=[COMPAT],
    )
    assert agent.chat("shout hi").startswith("done")
    offered = agent.client.requests[0].tool_names
    assert {"shout", "async_echo", "hermes_plugin_skill"} <= set(offered)
    assert "never_here" not in offered  # its check_fn says no
    first, second = _tool_results(agent)
    assert json.loads(first) == {"text": "HI", "task_id": agent.client.requests[0].task_id}
    assert json.loads(second) == {"echo": "x"}
    assert ("post_tool_call", "shout", "ok") in _demo().EVENTS


def test_a_guard_block_is_a_refusal_and_the_tool_never_runs(demo_host) -> None:
    agent = make_agent(tool_call("shout", {"text": "forbidden"}), text("ok"), plugins=[COMPAT])
    agent.chat("shout")
    [result] = _tool_results(agent)
    assert "BLOCKED: shouting forbidden words is not allowed (rule hermes-plugin:demo)" in result
    assert _demo().RAN == []
    assert ("post_tool_call", "shout", "blocked") in _demo().EVENTS


def test_a_guard_that_raises_blocks_the_call(demo_host) -> None:
    agent = make_agent(tool_call("shout", {"text": "crash"}), text("ok"), plugins=[COMPAT])
    agent.chat("shout")
    [result] = _tool_results(agent)
    assert "BLOCKED:" in result and "guard bug" in result
    assert _demo().RAN == []
    assert any("guard bug" in e for e in demo_host.plugins["demo"].hook_errors)


def test_a_modify_directive_rewrites_the_arguments(demo_host) -> None:
    agent = make_agent(tool_call("shout", {"text": "rewrite"}), text("ok"), plugins=[COMPAT])
    agent.chat("shout")
    assert json.loads(_tool_results(agent)[0])["text"] == "REWRITTEN"
    assert agent.messages[1]["tool_calls"][0]["function"]["arguments"] == '{"text": "rewrite"}'


def test_an_approve_directive_goes_to_the_approval_gate(demo_host) -> None:
    asked = []

    def deny(request):
        asked.append(request)
        return "deny"

    agent = make_agent(
        tool_call("shout", {"text": "ask"}), text("ok"), plugins=[COMPAT], approval_callback=deny
    )
    agent.chat("shout")
    [result] = _tool_results(agent)
    assert "BLOCKED: not approved: shouting needs consent" in result
    assert asked[0].reason == "shouting needs consent" and asked[0].key == "shout"
    assert ("approval", "shouting needs consent") in _demo().EVENTS  # pre_approval_request
    assert _demo().RAN == []

    agent = make_agent(
        tool_call("shout", {"text": "ask"}),
        text("ok"),
        plugins=[COMPAT],
        approval_callback=lambda request: "once",
    )
    agent.chat("shout")
    assert json.loads(_tool_results(agent)[0])["text"] == "ASK"


def test_pre_llm_call_context_goes_into_the_user_message_not_the_transcript(demo_host) -> None:
    agent = make_agent(tool_call("shout", {"text": "a"}), text("answer"), plugins=[COMPAT])
    assert agent.chat("hello") == "answer [demo]"  # transform_llm_output
    for request in agent.client.requests:  # every request of the turn carries the context
        user = [m for m in request.messages if m["role"] == "user"]
        assert user[-1]["content"] == "hello\n\nRemember: demo."
    assert agent.messages[0] == {"role": "user", "content": "hello"}
    assert agent.messages[-1]["content"] == "answer [demo]"


def test_session_hooks_fire(demo_host) -> None:
    with make_agent(text("hi"), plugins=[COMPAT]) as agent:
        agent.chat("hello")
        assert ("start",) in _demo().EVENTS
    assert ("end",) in _demo().EVENTS


def test_the_plugin_sees_its_manifest_and_profile(demo_host) -> None:
    assert ("registered", "custom", "1.2") in _demo().EVENTS
    assert demo_host.plugins["demo"].manifest.description.startswith("A demo plugin")


def test_plugins_list_reports_what_each_plugin_provides_and_what_is_not_honoured(
    hermes_cli, hermes_home: Path, write_demo, write_plugin
) -> None:
    write_demo(hermes_home)
    write_demo(hermes_home, "sleepy")
    write_plugin(hermes_home, "broken", "def register(ctx):\n    raise ValueError('no config')\n")
    write_plugin(
        hermes_home, "mem", "def register(ctx):\n    pass\n", "name: mem\nkind: exclusive\n"
    )
    (hermes_home / "config.yaml").write_text(
        "plugins:\n  enabled: [demo, broken, mem]\n", encoding="utf-8"
    )
    result = hermes_cli("plugins", "list")
    assert result.exit_code == 0, result.stderr
    out = result.output
    assert "  demo" in out and "via hermes-agent-compat" in out
    assert "hermes-agent-compat/demo: provides tool ask_model, tool relay, tool shout" in out
    assert "hook on_stream_delta: not honoured (no hook here sees the response stream)" in out
    assert "register_platform: not honoured" in out
    assert (
        "hermes-agent-compat/sleepy: skipped: not enabled (add 'sleepy' to plugins.enabled" in out
    )
    assert "hermes-agent-compat/broken: error: ValueError: no config" in out
    assert "hermes-agent-compat/mem: skipped: a memory provider" in out
    listing = json.loads(hermes_cli("plugins", "list", "--json").output)
    [compat] = [r for r in listing if r["name"] == COMPAT]
    hosted = {h["name"]: h for h in compat["hosted"]}
    assert hosted["demo"]["status"] == "loaded" and hosted["broken"]["status"] == "error"
    tools = hermes_cli("tools", "list").output
    assert "shout" in tools and "broken" not in tools


def test_disabled_wins_over_enabled(tmp_path: Path, write_demo) -> None:
    write_demo(tmp_path)
    config = {"plugins": {"enabled": ["demo"], "disabled": ["demo"]}}
    host = HermesPluginHost(tmp_path, config, entry_points=False).load()
    assert host.plugins["demo"].status == "disabled" and host.tools == {}


def test_a_broken_plugin_leaves_nothing_behind_and_the_others_load(
    tmp_path: Path, write_demo, write_plugin
) -> None:
    write_demo(tmp_path)
    write_plugin(
        tmp_path,
        "half",
        """
        def register(ctx):
            ctx.register_tool(name="half_tool", toolset="half", handler=lambda a, **k: "x",
                              schema={"name": "half_tool", "description": "d"})
            raise RuntimeError("second step failed")
        """,
    )
    host = HermesPluginHost(
        tmp_path, {"plugins": {"enabled": ["demo", "half"]}}, entry_points=False
    )
    host.load()
    assert host.plugins["half"].status == "error"
    assert "half_tool" not in host.tools and "shout" in host.tools


def _console(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-c", "import sys, hermes_core.cli as c; sys.exit(c.main())", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_commands_run_their_argparse_set_up(hermes_cli, hermes_home: Path, write_demo) -> None:
    write_demo(hermes_home)
    (hermes_home / "config.yaml").write_text("plugins:\n  enabled: [demo]\n", encoding="utf-8")
    ok = _console(hermes_home, "demo-cli", "--name", "Ada")
    assert ok.returncode == 0 and ok.stdout == "hello Ada\n", ok.stderr
    assert _console(hermes_home, "demo-cli", "--name", "Ada", "--fail").returncode == 3
    usage = _console(hermes_home, "demo-cli")
    assert usage.returncode == 2 and "the following arguments are required: --name" in usage.stderr
    shown = _console(hermes_home, "demo-cli", "--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: hermes demo-cli")
    slash = hermes_cli("agent-plugins", "command", "demo", "loud", "words")
    assert slash.exit_code == 0 and "demo got 'loud words'" in slash.output
    unknown = hermes_cli("agent-plugins", "command", "nope")
    assert unknown.exit_code == 1 and "no Hermes agent plugin command /nope" in unknown.stderr
    assert "demo:howto" in hermes_cli("agent-plugins", "skills").output


def test_no_plugin_is_imported_when_none_is_enabled(
    hermes_cli, hermes_home: Path, write_plugin
) -> None:
    write_plugin(hermes_home, "canary", "raise SystemExit('imported!')\n")
    result = hermes_cli("--help")
    assert result.exit_code == 0 and "agent-plugins" in result.output
    assert "canary" in hermes_cli("plugins", "list").output  # listed, still not imported


def test_ctx_llm_asks_the_users_model_without_turn_hooks(demo_host) -> None:
    agent = make_agent(
        tool_call("ask_model", {"question": "Capital of France?"}),
        text("Paris"),  # the plugin's completion
        text("It is Paris."),
        plugins=[COMPAT],
    )
    assert agent.chat("ask") == "It is Paris. [demo]"
    assert json.loads(_tool_results(agent)[0]) == {"answer": "Paris", "audit": "demo"}
    child = agent.client.requests[1]
    assert child.tools == []  # a completion, no tools
    assert child.messages[-1] == {"role": "user", "content": "Capital of France?"}  # no context
    assert "Answer in one word." in (child.system_prompt or "")


def test_dispatch_tool_reaches_hermes_plugin_tools_only(demo_host) -> None:
    agent = make_agent(tool_call("relay", {"text": "hey"}), text("ok"), plugins=[COMPAT])
    agent.chat("relay")
    assert json.loads(_tool_results(agent)[0]) == {"inner": "HEY", "other_refused": True}


def test_doctor_reports_a_broken_hermes_plugin(
    hermes_cli, hermes_home: Path, write_demo, write_plugin
) -> None:
    write_demo(hermes_home)
    write_plugin(hermes_home, "broken", "import not_a_module_anywhere\n")
    (hermes_home / "config.yaml").write_text(
        "plugins:\n  enabled: [demo, broken]\n", encoding="utf-8"
    )
    result = hermes_cli("doctor", "--no-network")
    assert "ok   plugin hermes-agent-compat/demo 1.2" in result.output
    assert "ERR  plugin hermes-agent-compat/broken: ModuleNotFoundError" in result.output
    assert result.exit_code == 1


def test_profile_names_and_the_profile_option_are_read_as_the_hermes_agent_does(
    tmp_path: Path,
) -> None:
    from hermes_compat_agent_plugins.manifest import profile_name
    from hermes_compat_agent_plugins.plugin import _argv_profile

    assert profile_name(Path.home() / ".hermes") == "default"
    assert profile_name(tmp_path / "profiles" / "work") == "work"
    assert profile_name(tmp_path) == "custom"
    assert _argv_profile(["--plugins", "a,b", "-p", "work", "demo-cli"]) == "work"
    assert _argv_profile(["--profile=home", "chat"]) == "home"
    assert _argv_profile(["demo-cli", "-p", "x"]) is None  # the command's own option


def test_system_prompt_sections_are_prompt_layers_after_the_memory_snapshot(demo_host) -> None:
    agent = make_agent(text("hi"), plugins=[COMPAT])
    agent.chat("hello")
    prompt = agent.client.requests[0].system_prompt or ""
    assert "## Plugin context: demo.rules\n\nAlways shout politely." in prompt
    assert "## Plugin context: demo.where\n\nProfile custom on " in prompt
    assert prompt.index("demo.rules") < prompt.index("demo.where")
