"""The plugin manager and the registry: loading, guards, selection, order, attribution."""

from __future__ import annotations

import types

import pytest

from hermes_core.plugins.manager import (
    CORE_PLUGINS,
    HOOK_NAMES,
    PluginLoadError,
    PluginManager,
    discover_entry_points,
)
from hermes_core.plugins.registry import Registry
from hermes_core.testing import make_agent, plugin_manager, text, tool_call, tool_calls
from hermes_hookspecs import (
    ApprovalRequest,
    Block,
    ContextEngine,
    Environment,
    HermesError,
    PromptLayer,
    Provider,
    Tool,
    Toolset,
    blocked,
    hookimpl,
)

OBJ = {"type": "object", "properties": {}}


def module(name: str, **hooks) -> types.ModuleType:
    mod = types.ModuleType(name)
    for hook_name, function in hooks.items():
        setattr(mod, hook_name, hookimpl(function))
    return mod


def toolsets_of(*toolsets):
    def hermes_register_toolsets(register):
        for toolset in toolsets:
            register(toolset)

    return hermes_register_toolsets


def tool(name):
    return Tool(name, f"{name} tool", OBJ, lambda a, c: name)


def test_core_plugins_load_first_in_a_fixed_order():
    manager = PluginManager(only=[], environ={})
    loaded = [r for r in manager.list_records() if r.status == "loaded"]
    assert [r.name for r in loaded] == [name for name, _ in CORE_PLUGINS]
    assert all(r.source == "core" for r in loaded)
    assert all(r.status == "skipped" for r in manager.list_records() if r.source != "core")


def test_entry_points_are_scanned_once_and_sorted():
    first = discover_entry_points()
    assert first == discover_entry_points()
    keys = [(not ep.dist.startswith("hermes-"), ep.name, ep.dist) for ep in first]
    assert keys == sorted(keys)
    own = [ep.dist.startswith("hermes-") for ep in first]
    assert own == sorted(own, reverse=True)  # the project's own dists load first
    assert "clarify" in [ep.name for ep in first]


def test_load_order_decides_call_order_newest_first():
    order = []
    a = module("a", hermes_session_start=lambda session: order.append("a"))
    b = module("b", hermes_session_start=lambda session: order.append("b"))
    manager = PluginManager(only=["clarify"], extra=[("a", a), ("b", b)], environ={})
    loaded = [r.name for r in manager.list_records() if r.status == "loaded"]
    assert loaded == ["core_layers", "clarify", "a", "b"]
    manager.call_each("hermes_session_start", session=None)
    assert order == ["b", "a"]


def test_hermes_plugins_selects_and_disabled_blocks():
    manager = PluginManager(environ={"HERMES_PLUGINS": "clarify"})
    statuses = {r.name: r.status for r in manager.list_records()}
    assert statuses["clarify"] == "loaded"
    assert all(s in ("skipped", "loaded") for s in statuses.values())
    manager = PluginManager(environ={"HERMES_DISABLE_PLUGINS": "clarify"})
    assert manager.records["clarify"].status == "disabled"
    manager = PluginManager(disabled=["clarify"], environ={})
    assert manager.records["clarify"].status == "disabled"
    manager = PluginManager(environ={"HERMES_PLUGINS": ""})
    assert all(r.status != "loaded" or r.source == "core" for r in manager.list_records())


def test_a_broken_plugin_is_recorded_and_the_rest_keeps_working():
    class Exploding:
        def __getattr__(self, name):
            raise RuntimeError("import-time failure")

    misspelled = module("typo", hermes_register_toolset=lambda register: None)
    bad_args = module("bad_args", hermes_session_start=lambda session, nonsense: None)
    good = module("good", hermes_register_toolsets=toolsets_of(Toolset("ok", tools=[tool("ok")])))
    manager = PluginManager(
        only=[], environ={}, extra=[("typo", misspelled), ("bad_args", bad_args), ("good", good)]
    )
    assert manager.records["typo"].status == "error"
    assert (
        "unknown hook hermes_register_toolset (did you mean hermes_register_toolsets?)"
        in manager.records["typo"].error
    )
    assert manager.records["bad_args"].status == "error"
    assert manager.records["good"].status == "loaded"
    assert "ok" in Registry(manager).toolsets
    with pytest.raises(PluginLoadError, match="typo"):
        PluginManager(only=[], environ={}, strict=True, extra=[("typo", misspelled)])


def test_hook_exceptions_are_recorded_against_the_plugin():
    def boom(session):
        raise ValueError("bad hook")

    seen = []
    manager = plugin_manager(
        [
            module("boom", hermes_session_start=boom),
            module("fine", hermes_session_start=lambda session: seen.append(session)),
        ],
        strict=False,
    )
    manager.call_each("hermes_session_start", session="s")
    assert seen == ["s"]
    assert manager.records["boom"].hook_errors == ["hermes_session_start: ValueError: bad hook"]
    assert [r.name for r in manager.failures()] == ["boom"]


def test_duplicate_tool_names_are_an_error_naming_both_plugins():
    first = module("first", hermes_register_toolsets=toolsets_of(Toolset("a", tools=[tool("x")])))
    second = module(
        "second",
        hermes_register_toolsets=toolsets_of(
            Toolset("b", tools=[tool("x")]), Toolset("c", tools=[tool("y")])
        ),
    )
    manager = plugin_manager([first, second])
    registry = Registry(manager)
    assert set(registry.toolsets) == {"a", "c"}  # the clash is rejected, the rest is kept
    error = manager.records["second"].hook_errors[0]
    assert "tool 'x' is registered by both 'first' and 'second'" in error


def test_everything_registered_remembers_its_plugin():
    class Engine(ContextEngine):
        name = "tiny"

        def should_compress(self, prompt_tokens):
            return False

        def compress(self, messages, current_tokens=None, focus=None):
            return messages

    class Plugin:
        @hookimpl
        def hermes_register_toolsets(self, register):
            register(Toolset("t", tools=[tool("t1")]))

        @hookimpl
        def hermes_register_environments(self, register):
            register("fake", lambda config, task_id: None)

        @hookimpl
        def hermes_register_providers(self, register):
            register(Provider("p", "chat_completions", create_client=lambda s: None))

        @hookimpl
        def hermes_register_context_engines(self, register):
            register(Engine)

    registry = Registry(plugin_manager([Plugin()]))
    for table in (registry.toolsets, registry.environments, registry.providers, registry.engines):
        assert [r.plugin for r in table.values()] == ["Plugin"]


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            Toolset("x", tools=[Tool("bad name!", "", OBJ, lambda a, c: "")]),
            "tool name 'bad name!'",
        ),
        (Toolset("x", tools=[Tool("t", "", OBJ, handler="nope")]), "no callable handler"),
        ("not a toolset", "expected a Toolset"),
    ],
)
def test_invalid_registrations_are_rejected(bad, message):
    manager = plugin_manager([module("m", hermes_register_toolsets=toolsets_of(bad))])
    assert Registry(manager).toolsets == {}
    assert message in manager.records["m"].hook_errors[0]


def test_provider_with_unknown_api_mode_is_rejected():
    plugin = module(
        "p",
        hermes_register_providers=lambda register: register(
            Provider("x", "smoke_signals", create_client=lambda s: None)
        ),
    )
    manager = plugin_manager([plugin])
    assert Registry(manager).providers == {}
    assert "unknown api_mode" in manager.records["p"].hook_errors[0]


def test_pre_tool_call_can_block_rewrite_and_observe():
    seen = []

    def guard(call, context):
        seen.append((call.name, dict(call.arguments)))
        if call.arguments.get("x") == "forbidden":
            return Block("not allowed here")
        if call.arguments.get("x") == "rewrite":
            return {"x": "rewritten"}
        return None

    echo = Tool(
        "echo",
        "",
        {"type": "object", "properties": {"x": {"type": "string"}}},
        lambda a, c: f"echo:{a['x']}",
    )
    plugins = [
        module("ts", hermes_register_toolsets=toolsets_of(Toolset("e", tools=[echo]))),
        module("guard", hermes_pre_tool_call=guard),
    ]
    agent = make_agent(
        tool_call("echo", {"x": "forbidden"}),
        tool_call("echo", {"x": "rewrite"}),
        text("done"),
        plugins=plugins,
    )
    agent.chat("go")
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert results == [blocked("plugin:guard", "not allowed here"), "echo:rewritten"]
    assert seen[0] == ("echo", {"x": "forbidden"})


def test_a_crashing_guard_blocks_the_call():
    def guard(call, context):
        raise RuntimeError("guard bug")

    ran = []
    plugins = [
        module(
            "ts",
            hermes_register_toolsets=toolsets_of(
                Toolset("e", tools=[Tool("t", "", OBJ, lambda a, c: ran.append(1))])
            ),
        ),
        module("guard", hermes_pre_tool_call=guard),
    ]
    agent = make_agent(tool_call("t"), text("ok"), plugins=plugins)
    agent.chat("go")
    assert ran == []
    refusal = agent.messages[2]["content"]
    assert refusal.startswith("BLOCKED: the plugin failed while checking this call (RuntimeError")
    assert "(rule plugin:guard)" in refusal and "Do not retry" in refusal


def test_post_tool_call_replaces_results_in_chain():
    plugins = [
        module(
            "ts",
            hermes_register_toolsets=toolsets_of(
                Toolset("e", tools=[Tool("t", "", OBJ, lambda a, c: "secret=42")])
            ),
        ),
        module(
            "redact",
            hermes_post_tool_call=lambda call, result, context: result.content.replace("42", "***"),
        ),
        module("observe", hermes_post_tool_call=lambda call, result: None),
    ]
    agent = make_agent(tool_call("t"), text("ok"), plugins=plugins)
    agent.chat("go")
    assert agent.messages[2]["content"] == "secret=***"


def test_request_and_response_hooks_see_every_call():
    requests, responses = [], []
    plugins = [
        module(
            "obs",
            hermes_before_request=lambda request: requests.append(request),
            hermes_after_response=lambda response: responses.append(response),
        )
    ]
    agent = make_agent(text("a"), text("b"), plugins=plugins)
    agent.chat("1")
    agent.chat("2")
    assert len(requests) == 2 and len(responses) == 2
    assert responses[1].message["content"] == "b"


def test_session_start_and_end_hooks():
    events = []
    plugins = [
        module(
            "s",
            hermes_session_start=lambda session: events.append(("start", session.id)),
            hermes_session_end=lambda session: events.append(("end", session.end_reason)),
        )
    ]
    agent = make_agent(text("a"), text("b"), plugins=plugins)
    agent.chat("1")
    agent.chat("2")
    agent.close()
    assert events == [("start", agent.session_id), ("end", "closed")]


def test_a_later_plugin_overrides_a_prompt_layer_by_name():
    base = module(
        "base",
        hermes_prompt_layers=lambda context: [
            PromptLayer("identity", "I am the default.", order=1),
            PromptLayer("rules", "Rule 1."),
        ],
    )
    override = module(
        "override",
        hermes_prompt_layers=lambda context: PromptLayer("identity", "I am custom.", order=1),
    )
    agent = make_agent(text("ok"), plugins=[base, override])
    agent.chat("hi")
    assert agent.client.last_request.system_prompt == "I am custom.\n\nRule 1."


def test_environment_is_created_lazily_per_task_and_fails_closed():
    made = []

    class Env(Environment):
        def run(self, command, **kw):
            raise NotImplementedError

        def read_file(self, path):
            return b"data"

        def write_file(self, path, data):
            pass

    def factory(config, task_id):
        made.append(task_id)
        return Env()

    def read(args, ctx):
        return ctx.environment.read_file("x").decode()

    plugins = [
        module("envs", hermes_register_environments=lambda register: register("fake", factory)),
        module(
            "ts",
            hermes_register_toolsets=toolsets_of(Toolset("r", tools=[Tool("read", "", OBJ, read)])),
        ),
    ]
    agent = make_agent(
        tool_call("read"),
        tool_call("read"),
        text("ok"),
        plugins=plugins,
        config={"terminal": {"backend": "fake"}},
    )
    agent.run_conversation("go", task_id="t1")
    assert made == ["t1"]
    assert [m["content"] for m in agent.messages if m["role"] == "tool"] == ["data", "data"]

    agent = make_agent(
        tool_call("read"),
        text("ok"),
        plugins=plugins[1:],
        config={"terminal": {"backend": "docker"}},
    )
    agent.chat("go")
    assert "execution backend 'docker' is not installed" in agent.messages[2]["content"]


def test_core_plugins_can_be_disabled():
    manager = PluginManager(only=[], disabled=["core_layers"], environ={})
    assert manager.records["core_layers"].status == "disabled"
    agent = make_agent(text("ok"), plugin_manager=manager)
    agent.run_conversation("hi", system_message="not used")
    assert agent.client.last_request.system_prompt is None


def test_registration_hooks_run_once_per_plugin_manager():
    calls = []

    def register_toolsets(register):
        calls.append(1)
        register(Toolset("once", tools=[tool("once")]))

    manager = plugin_manager([module("counted", hermes_register_toolsets=register_toolsets)])
    first = make_agent(text("a"), plugin_manager=manager)
    second = make_agent(text("b"), plugin_manager=manager)
    assert first.toolbox.names == second.toolbox.names == ("once",)
    assert calls == [1]


def test_bad_hook_signature_error_keeps_the_detail():
    bad = module("bad_sig", hermes_pre_tool_call=lambda call, context, extra: None)
    manager = PluginManager(only=[], environ={}, extra=[("bad_sig", bad)])
    error = manager.records["bad_sig"].error
    assert "bad_sig" in error and "extra" in error and "\n" not in error


def guarded_shell(ran):
    """A toolset with an echo tool and a tool that needs approval, both recording their runs."""

    def needs_approval(args):
        return ApprovalRequest(action=args["x"], reason="dangerous", key="rm")

    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    return Toolset(
        "guarded",
        tools=[
            Tool("echo", "", schema, lambda a, c: ran.append(("echo", a["x"])) or "echoed"),
            Tool(
                "rm",
                "",
                schema,
                lambda a, c: ran.append(("rm", a["x"])) or "removed",
                needs_approval=needs_approval,
            ),
        ],
    )


class SpecnamePlugin:
    """Every hook under a function name of its own, bound by ``specname``."""

    def __init__(self, ran):
        self.ran = ran
        self.approved = []

    @hookimpl(specname="hermes_register_toolsets")
    def add_my_tools(self, register):
        register(guarded_shell(self.ran))

    @hookimpl(specname="hermes_pre_tool_call")
    def my_guard(self, call):
        if call.arguments.get("x") == "forbidden":
            return Block("my_guard says no")
        return None

    @hookimpl(specname="hermes_approve")
    def my_policy(self, request):
        self.approved.append(request.action)
        return "once"


def test_specname_implementations_are_called_wherever_the_hook_is():
    ran = []
    plugin = SpecnamePlugin(ran)
    agent = make_agent(
        tool_calls(("echo", {"x": "forbidden"}), ("echo", {"x": "fine"}), ("rm", {"x": "a"})),
        text("done"),
        plugins=[plugin],
    )
    agent.chat("go")
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert results == [blocked("plugin:SpecnamePlugin", "my_guard says no"), "echoed", "removed"]
    # The calls run in parallel; no approval callback: the plugin approved "rm".
    assert sorted(ran) == [("echo", "fine"), ("rm", "a")]
    assert plugin.approved == ["a"]
    record = agent.plugins.records["SpecnamePlugin"]
    assert record.hooks == ["hermes_approve", "hermes_pre_tool_call", "hermes_register_toolsets"]


def test_a_specname_naming_no_hook_is_a_load_error():
    class Typo:
        @hookimpl(specname="hermes_pre_tool_cal")
        def my_guard(self, call):
            return None

    manager = PluginManager(only=[], environ={}, extra=[("typo", Typo())])
    error = manager.records["typo"].error
    assert "unknown hook hermes_pre_tool_cal (specname of my_guard)" in error
    assert "did you mean hermes_pre_tool_call?" in error


def test_firstresult_the_newest_answer_wins_and_later_ones_are_not_asked():
    asked = []

    def approver(name, answer):
        return module(name, hermes_approve=lambda request: asked.append(name) or answer)

    ran = []
    shell = module("shell", hermes_register_toolsets=toolsets_of(guarded_shell(ran)))
    plugins = [shell, approver("old", "once"), approver("silent", None), approver("new", "deny")]
    agent = make_agent(tool_call("rm", {"x": "a"}), text("ok"), plugins=plugins)
    agent.chat("go")
    assert asked == ["new"] and ran == []
    assert agent.messages[2]["content"].startswith("BLOCKED:")
    assert "(rule plugin:new)" in agent.messages[2]["content"]

    asked.clear()
    plugins = [shell, approver("old", "once"), approver("silent", None)]
    agent = make_agent(tool_call("rm", {"x": "b"}), text("ok"), plugins=plugins)
    agent.chat("go")
    assert asked == ["silent", "old"] and ran == [("rm", "b")]


def test_call_first_skips_a_failure_unless_it_fails_closed():
    def broken(provider, settings):
        raise RuntimeError("vault down")

    manager = plugin_manager(
        [
            module("vault", hermes_refresh_credentials=lambda provider, settings: "from-vault"),
            module("broken", hermes_refresh_credentials=broken),
        ]
    )
    answer = manager.call_first("hermes_refresh_credentials", provider="p", settings=None)
    assert (answer.record.name, answer.value, answer.error) == ("vault", "from-vault", None)
    assert manager.records["broken"].hook_errors == [
        "hermes_refresh_credentials: RuntimeError: vault down"
    ]
    answer = manager.call_first(
        "hermes_refresh_credentials", fail_closed=True, provider="p", settings=None
    )
    assert answer.record.name == "broken" and isinstance(answer.error, RuntimeError)
    assert answer.value is None


def test_firstresult_hooks_have_one_way_in():
    manager = plugin_manager([])
    firstresult = sorted(h for h in HOOK_NAMES if manager.is_firstresult(h))
    assert firstresult == ["hermes_approve", "hermes_person_scope", "hermes_refresh_credentials"]
    with pytest.raises(HermesError, match="call it with call_first"):
        manager.call_each("hermes_approve", request=None, context=None)
    with pytest.raises(HermesError, match="call it with call_each"):
        manager.call_first("hermes_session_start", session=None)


def test_the_test_kit_traces_when_asked(monkeypatch, capsys):
    seen = []
    plugins = [module("watcher", hermes_session_start=lambda session: seen.append(session))]
    make_agent(text("hi"), plugins=plugins).chat("hello")
    assert seen and "trace:" not in capsys.readouterr().err

    monkeypatch.setenv("HERMES_TRACE_PLUGINS", "1")
    make_agent(text("hi"), plugins=plugins).chat("hello")
    out, err = capsys.readouterr()
    assert "hermes: trace: hermes_session_start <- watcher " in err
    assert " ms -> None" in err and "trace:" not in out
