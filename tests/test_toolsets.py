"""Toolset selection, availability, schemas, and approval of dangerous calls."""

from __future__ import annotations

import types

import pytest

from hermes_core.plugins.registry import Registry
from hermes_core.testing import make_agent, plugin_manager, text, tool_call, tool_calls
from hermes_core.tools.toolsets import ToolsetError, build_toolbox, describe_tools, enabled_toolsets
from hermes_hookspecs import ApprovalRequest, Tool, Toolset, blocked, hookimpl

OBJ = {"type": "object", "properties": {}}


def tool(name, **kwargs):
    return Tool(name, f"{name} tool", OBJ, lambda a, c: name, **kwargs)


def registry_with(*toolsets) -> Registry:
    mod = types.ModuleType("ts")

    def hermes_register_toolsets(register):
        for toolset in toolsets:
            register(toolset)

    mod.hermes_register_toolsets = hookimpl(hermes_register_toolsets)
    return Registry(plugin_manager([mod]))


def test_default_bundle_is_every_toolset_enabled_by_default():
    registry = registry_with(
        Toolset("a", tools=[tool("a1")]), Toolset("b", tools=[tool("b1")], enabled_by_default=False)
    )
    assert enabled_toolsets(registry, {}) == ["a"]
    assert enabled_toolsets(registry, {"toolsets": ["all"]}) == ["a", "b"]
    assert enabled_toolsets(registry, {"toolsets": ["b"]}) == ["b"]


def test_includes_expand_recursively_and_disabled_toolsets_subtract():
    registry = registry_with(
        Toolset("web", tools=[tool("fetch")]),
        Toolset("files", tools=[tool("read")]),
        Toolset("coding", includes=["files", "web"]),
        Toolset("cli", includes=["coding"], enabled_by_default=False),
    )
    assert enabled_toolsets(registry, {"toolsets": ["cli"]}) == ["cli", "coding", "files", "web"]
    config = {"toolsets": ["cli"], "disabled_toolsets": ["web"]}
    assert build_toolbox(registry, config).names == ("read",)


def test_include_cycles_and_unknown_names_are_clear_errors():
    registry = registry_with(Toolset("a", includes=["b"]), Toolset("b", includes=["a"]))
    with pytest.raises(ToolsetError, match="cycle: a -> b -> a"):
        enabled_toolsets(registry, {"toolsets": ["a"]})
    with pytest.raises(ToolsetError, match="unknown toolset 'nope' \\(installed: a, b\\)"):
        enabled_toolsets(registry, {"toolsets": ["nope"]})


def test_unavailable_tools_are_hidden_and_explained(monkeypatch):
    monkeypatch.delenv("ACME_KEY", raising=False)
    registry = registry_with(
        Toolset(
            "t",
            tools=[
                tool("needs_key", requires_env=["ACME_KEY"]),
                tool("broken_check", check=lambda: 1 / 0),
                tool("says_no", check=lambda: "service offline"),
                tool("fine", check=lambda: True),
            ],
        )
    )
    assert build_toolbox(registry, {}).names == ("fine",)
    reasons = {i.tool.name: i.reason for i in describe_tools(registry, {})}
    assert reasons["needs_key"] == "missing environment variable ACME_KEY"
    assert reasons["broken_check"].startswith("check failed: ZeroDivisionError")
    assert reasons["says_no"] == "service offline"
    monkeypatch.setenv("ACME_KEY", "k")
    assert "needs_key" in build_toolbox(registry, {}).names


def test_schemas_are_sorted_and_immune_to_later_mutation():
    params = {"type": "object", "properties": {"x": {"type": "string"}}}
    registry = registry_with(
        Toolset("t", tools=[Tool("b", "", params, lambda a, c: ""), tool("a")])
    )
    box = build_toolbox(registry, {})
    before = box.schemas_json()
    params["properties"]["y"] = {"type": "integer"}
    assert [s["function"]["name"] for s in box.schemas] == ["a", "b"]
    assert box.schemas_json() == before


def dangerous_tool(ran):
    def needs_approval(args):
        if "rm" in args.get("cmd", ""):
            return ApprovalRequest(action=args["cmd"], reason="recursive delete", key="rm")
        return None

    return Tool(
        "sh",
        "",
        {"type": "object", "properties": {"cmd": {"type": "string"}}},
        lambda a, c: ran.append(a["cmd"]) or "ran",
        needs_approval=needs_approval,
    )


def plugin_for(*tools):
    mod = types.ModuleType("shell")
    mod.hermes_register_toolsets = hookimpl(
        lambda register: register(Toolset("shell", tools=list(tools)))
    )
    return mod


def test_dangerous_call_is_denied_with_no_one_to_approve():
    ran = []
    agent = make_agent(
        tool_call("sh", {"cmd": "rm -rf /tmp/x"}),
        tool_call("sh", {"cmd": "ls"}),
        text("ok"),
        plugins=[plugin_for(dangerous_tool(ran))],
    )
    agent.chat("go")
    assert ran == ["ls"]
    assert agent.messages[2]["content"] == blocked(
        "no-approver",
        "not approved, as no one was available to approve it: recursive delete",
        "rm -rf /tmp/x",
    )


def test_session_approval_is_remembered_and_once_is_not():
    ran, asked = [], []

    def ask(request):
        asked.append(request.action)
        return "session" if len(asked) == 1 else "deny"

    agent = make_agent(
        tool_call("sh", {"cmd": "rm a"}),
        tool_call("sh", {"cmd": "rm b"}),
        text("ok"),
        plugins=[plugin_for(dangerous_tool(ran))],
        approval_callback=ask,
    )
    agent.chat("go")
    assert ran == ["rm a", "rm b"] and asked == ["rm a"]

    ran.clear()
    agent = make_agent(
        tool_call("sh", {"cmd": "rm a"}),
        tool_call("sh", {"cmd": "rm b"}),
        text("ok"),
        plugins=[plugin_for(dangerous_tool(ran))],
        approval_callback=lambda r: "once",
    )
    agent.chat("go")
    assert ran == ["rm a", "rm b"]


def test_approve_hook_decides_before_the_user_and_a_crash_denies():
    ran, asked = [], []

    def policy(request, context):
        return "deny" if "/" in request.action else None

    mod = types.ModuleType("policy")
    mod.hermes_approve = hookimpl(policy)
    agent = make_agent(
        tool_calls(("sh", {"cmd": "rm /etc"}), ("sh", {"cmd": "rm x"})),
        text("ok"),
        plugins=[plugin_for(dangerous_tool(ran)), mod],
        approval_callback=lambda r: asked.append(r.action) or "once",
    )
    agent.chat("go")
    assert ran == ["rm x"] and asked == ["rm x"]
    assert agent.messages[2]["content"] == blocked(
        "plugin:policy", "not approved by the approval plugin policy: recursive delete", "rm /etc"
    )

    crash = types.ModuleType("crash")
    crash.hermes_approve = hookimpl(lambda request: 1 / 0)
    ran.clear()
    agent = make_agent(
        tool_call("sh", {"cmd": "rm x"}),
        text("ok"),
        plugins=[plugin_for(dangerous_tool(ran)), crash],
        approval_callback=lambda r: "once",
    )
    agent.chat("go")
    refusal = agent.messages[2]["content"]
    assert ran == [] and refusal.startswith("BLOCKED: the approval plugin crash failed (")
    assert "ZeroDivisionError" in refusal and "(rule plugin:crash)" in refusal


def test_yolo_approves_and_deny_mode_ignores_the_user():
    ran = []
    agent = make_agent(
        tool_call("sh", {"cmd": "rm a"}),
        text("ok"),
        plugins=[plugin_for(dangerous_tool(ran))],
        yolo=True,
    )
    agent.chat("go")
    assert ran == ["rm a"]
    ran.clear()
    agent = make_agent(
        tool_call("sh", {"cmd": "rm a"}),
        text("ok"),
        plugins=[plugin_for(dangerous_tool(ran))],
        approval_callback=lambda r: "once",
        config={"approvals": {"mode": "deny"}},
    )
    agent.chat("go")
    assert ran == []


def test_handlers_can_ask_for_approval_through_the_context():
    def handler(args, ctx):
        return "done" if ctx.approve("drop table", "destructive SQL") else "skipped"

    agent = make_agent(
        tool_call("sql"),
        text("ok"),
        plugins=[plugin_for(Tool("sql", "", OBJ, handler))],
        approval_callback=lambda r: "deny",
    )
    agent.chat("go")
    assert agent.messages[2]["content"] == "skipped"


def test_an_empty_toolsets_list_enables_nothing():
    registry = registry_with(Toolset("a", tools=[tool("a1")]))
    assert enabled_toolsets(registry, {"toolsets": []}) == []
    assert enabled_toolsets(registry, {}) == ["a"]


# --- toolsets that follow the configuration, tools known at run time ----------------------


class ConfiguredStations:
    """One toolset per ``stations`` entry; each lists its tools when first asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl
    def hermes_register_configured_toolsets(self, config, register):
        for name, kind in (config.get("stations") or {}).items():
            register(Toolset(f"station-{name}", discover=self._discover(name, kind)))

    def _discover(self, name, kind):
        def discover():
            self.asked.append(name)
            if kind == "down":
                raise RuntimeError(f"station {name} does not answer\nsecond line")
            if kind == "bad":
                return [tool(f"{name}_ok"), tool("bad name!"), tool("a1")]
            return [tool(f"{name}_read")]

        return discover


def test_configured_toolsets_discover_once_and_report_each_problem_once():
    stations = ConfiguredStations()
    plugins = plugin_manager([stations, plugin_for(tool("a1"))])
    config = {"stations": {"north": "up", "south": "down", "east": "bad", "west": "up"}}
    registry = Registry.of(plugins, config)
    assert Registry.of(plugins, {"stations": {}}).config is config  # the first one is kept
    reported: list[str] = []
    wanted = ["shell", "station-north", "station-south", "station-east"]
    box = build_toolbox(registry, {"toolsets": wanted}, report=reported.append)
    assert box.names == ("a1", "east_ok", "north_read")
    assert sorted(reported) == [
        "toolset 'station-east': left out the invalid tool name 'bad name!'",
        "toolset 'station-east': left out tool 'a1', toolset 'shell' has that name",
        "toolset 'station-south' unavailable: station south does not answer",
    ]
    again: list[str] = []
    assert build_toolbox(registry, {"toolsets": ["all"]}, report=again.append).names == (
        "a1",
        "east_ok",
        "north_read",
        "west_read",
    )
    assert again == [] and sorted(stations.asked) == ["east", "north", "south", "west"]
    infos = {(i.toolset, i.tool.name): i for i in describe_tools(registry, {})}
    down = infos[("station-south", "-")]
    assert not down.available and "does not answer" in (down.reason or "")
    assert infos[("station-west", "west_read")].available


def test_without_a_configuration_the_configured_hook_is_not_called():
    stations = ConfiguredStations()
    registry = Registry(plugin_manager([stations]))
    assert registry.toolsets == {}


def test_an_agent_offers_discovered_tools_and_names_problems():
    stations = ConfiguredStations()
    with make_agent(
        tool_call("north_read"),
        text("ok"),
        plugins=[stations],
        config={"stations": {"north": "up", "south": "down"}},
    ) as agent:
        assert agent.chat("read") == "ok"
        assert agent.client.requests[0].tool_names == ["north_read"]
        assert agent.messages[2]["content"] == "north_read"
        assert agent.tool_problems == [
            "toolset 'station-south' unavailable: station south does not answer"
        ]
