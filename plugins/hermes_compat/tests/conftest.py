"""A Hermes agent folder plugin written the way its authors write them, in a temporary home."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hermes_compat_agent_plugins import plugin as bridge
from hermes_compat_agent_plugins.host import HermesPluginHost, reset_hosts

DEMO_MANIFEST = """\
name: demo
version: "1.2"
description: A demo plugin written for the Hermes agent
provides_tools: [shout]
"""

DEMO_INIT = '''
"""A Hermes agent plugin: tools, a guard, observers, context injection, commands."""
import json
from pathlib import Path

from .helpers import upper

EVENTS = []
RAN = []


def _shout(args, **kwargs):
    RAN.append(args["text"])
    return json.dumps({"text": upper(args["text"]), "task_id": kwargs.get("task_id")})


async def _echo(args, **kwargs):
    return json.dumps({"echo": args.get("text", "")})


SCHEMA = {
    "name": "shout",
    "description": "Upper-case a text",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                   "required": ["text"]},
}


def guard(tool_name, args, task_id, **kwargs):
    EVENTS.append(("pre_tool_call", tool_name, dict(args)))
    text = args.get("text")
    if text == "forbidden":
        return {"action": "block", "message": "shouting forbidden words is not allowed"}
    if text == "rewrite":
        return {"action": "modify", "args": {"text": "rewritten"}}
    if text == "ask":
        return {"action": "approve", "message": "shouting needs consent", "rule_key": "shout"}
    if text == "crash":
        raise RuntimeError("guard bug")
    return None


def observe(tool_name, result, duration_ms, status, **kwargs):
    EVENTS.append(("post_tool_call", tool_name, status))


CTX = []


def _ask_model(args, **kwargs):
    answer = CTX[0].llm.complete(
        [{"role": "system", "content": "Answer in one word."},
         {"role": "user", "content": args["question"]}], purpose="demo")
    return json.dumps({"answer": answer.text, "audit": answer.audit["plugin_id"]})


def _relay(args, **kwargs):
    inner = json.loads(CTX[0].dispatch_tool("shout", {"text": args["text"]}))
    other = json.loads(CTX[0].dispatch_tool("terminal", {"command": "ls"}))
    return json.dumps({"inner": inner["text"], "other_refused": "error" in other})


def register(ctx):
    CTX.append(ctx)
    ctx.register_tool(name="ask_model", toolset="demo_llm", handler=_ask_model,
                      schema={"name": "ask_model", "description": "Ask the model",
                              "parameters": {"type": "object", "properties": {
                                  "question": {"type": "string"}}, "required": ["question"]}})
    ctx.register_tool(name="relay", toolset="demo_tools", handler=_relay,
                      schema={"name": "relay", "description": "Shout through dispatch_tool",
                              "parameters": {"type": "object", "properties": {
                                  "text": {"type": "string"}}, "required": ["text"]}})
    ctx.register_hook("pre_approval_request",
                      lambda command, description, **kw: EVENTS.append(("approval", description)))
    ctx.register_tool(name="shout", toolset="demo_tools", schema=SCHEMA, handler=_shout)
    ctx.register_tool(name="async_echo", toolset="demo_tools", is_async=True, handler=_echo,
                      schema={"name": "async_echo", "description": "Echo",
                              "parameters": {"type": "object", "properties": {
                                  "text": {"type": "string"}}}})
    ctx.register_tool(name="never_here", toolset="demo_tools", schema=SCHEMA, handler=_shout,
                      check_fn=lambda: False)
    ctx.register_hook("pre_tool_call", guard)
    ctx.register_hook("post_tool_call", observe)
    ctx.register_hook("pre_llm_call", lambda is_first_turn, **kw: {"context": "Remember: demo."})
    ctx.register_hook("transform_llm_output", lambda response_text, **kw: response_text + " [demo]")
    ctx.register_hook("on_session_start", lambda session_id, **kw: EVENTS.append(("start",)))
    ctx.register_hook("on_session_end", lambda session_id, **kw: EVENTS.append(("end",)))
    ctx.register_hook("on_stream_delta", lambda **kw: None)
    ctx.register_command("demo", lambda raw_args: f"demo got {raw_args!r}", args_hint="<text>")
    ctx.register_cli_command("demo-cli", "Greet from the demo plugin", _setup, _run)
    ctx.register_skill("howto", Path(__file__).parent / "SKILL.md", "How to shout")
    ctx.register_platform("irc", "IRC", lambda cfg: None, lambda: True)
    ctx.register_system_prompt_section("demo.rules", "Always shout politely.")
    ctx.register_system_prompt_section(
        "demo.where", lambda info: f"Profile {info['profile_name']} on {info['platform']}.")
    EVENTS.append(("registered", ctx.profile_name, ctx.manifest.version))


def _setup(parser):
    parser.add_argument("--name", required=True)
    parser.add_argument("--fail", action="store_true")


def _run(args):
    print(f"hello {args.name}")
    return 3 if args.fail else 0
'''


def _write_demo(home: Path, name: str = "demo") -> Path:
    """Write the demo plugin into ``<home>/plugins/<name>``."""
    folder = home / "plugins" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.yaml").write_text(DEMO_MANIFEST.replace("demo", name, 1), encoding="utf-8")
    (folder / "__init__.py").write_text(DEMO_INIT, encoding="utf-8")
    (folder / "helpers.py").write_text("def upper(text):\n    return text.upper()\n")
    (folder / "SKILL.md").write_text("---\nname: howto\n---\nShout politely.\n")
    return folder


def _write_plugin(home: Path, name: str, init: str, manifest: str = "") -> Path:
    """Write a small folder plugin with the given ``__init__.py``."""
    folder = home / "plugins" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.yaml").write_text(manifest or f"name: {name}\n", encoding="utf-8")
    (folder / "__init__.py").write_text(textwrap.dedent(init), encoding="utf-8")
    return folder


@pytest.fixture(autouse=True)
def _fresh_hosts() -> Iterator[None]:
    reset_hosts()
    bridge.use_host(None)
    yield
    reset_hosts()
    bridge.use_host(None)


@pytest.fixture
def demo_host(tmp_path: Path) -> HermesPluginHost:
    """A loaded host of a home holding the demo plugin (enabled), serving every hook."""
    _write_demo(tmp_path)
    host = HermesPluginHost(tmp_path, {"plugins": {"enabled": ["demo"]}}, entry_points=False)
    host.load()
    bridge.use_host(host)
    return host


@pytest.fixture(name="write_demo")
def write_demo_fixture() -> Callable[..., Path]:
    """``write_demo(home, name="demo")`` writes the demo plugin into a home."""
    return _write_demo


@pytest.fixture(name="write_plugin")
def write_plugin_fixture() -> Callable[..., Path]:
    """``write_plugin(home, name, init, manifest="")`` writes a small folder plugin."""
    return _write_plugin
