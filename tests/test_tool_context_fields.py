"""The typed fields of ``ToolContext`` the host sets (``hermes_home``, ``session_store``), their
inheritance by subagents, and ``default_home``."""

from __future__ import annotations

from pathlib import Path

from hermes_core.config.loading import resolve_home
from hermes_core.session_store import MemorySessionStore
from hermes_core.testing import make_agent, text, tool_call
from hermes_hookspecs import (
    AgentTask,
    Tool,
    ToolContext,
    Toolset,
    hookimpl,
)
from hermes_runtime.home import default_home

OBJ = {"type": "object", "properties": {}}


def plugin(*tools: Tool) -> object:
    class Plugin:
        @hookimpl
        def hermes_register_toolsets(self, register):
            register(Toolset(name="probe", description="probe", tools=list(tools)))

    return Plugin()


def peek_tool(seen: list[ToolContext]) -> Tool:
    def peek(args, ctx):
        seen.append(ctx)
        return "ok"

    return Tool("peek", "records its context", OBJ, peek)


def test_a_tool_reads_the_home_and_the_store_from_typed_fields(tmp_path):
    seen: list[ToolContext] = []
    agent = make_agent(
        tool_call("peek"), text("done"), plugins=[plugin(peek_tool(seen))], home=tmp_path, config={}
    )
    agent.chat("go")
    (ctx,) = seen
    assert ctx.hermes_home == tmp_path and isinstance(ctx.hermes_home, Path)
    assert ctx.session_store is agent.session_store
    assert ctx.session_store.get_session(ctx.session_id) is not None


def test_a_tool_writes_into_the_home_it_is_given(tmp_path):
    def save(args, ctx):
        (ctx.hermes_home / "note.txt").write_text(args["text"], encoding="utf-8")
        return "saved"

    tool = Tool(
        "save",
        "saves a note",
        {"type": "object", "properties": {"text": {"type": "string"}}},
        save,
    )
    agent = make_agent(
        tool_call("save", {"text": "remember"}),
        text("done"),
        plugins=[plugin(tool)],
        home=tmp_path,
        config={},
    )
    agent.chat("go")
    assert (tmp_path / "note.txt").read_text(encoding="utf-8") == "remember"


def test_an_agent_without_a_home_says_so_with_none():
    seen: list[ToolContext] = []
    agent = make_agent(tool_call("peek"), text("done"), plugins=[plugin(peek_tool(seen))])
    agent.chat("go")
    assert seen[0].hermes_home is None
    assert isinstance(seen[0].session_store, MemorySessionStore)


def test_subagents_inherit_the_home_and_the_store(tmp_path):
    seen: list[ToolContext] = []

    def spawn(args, ctx):
        outcome = ctx.agents.run(AgentTask(prompt="peek for me", source="subagent"))
        return f"{outcome.status}: {outcome.text}"

    tools = [peek_tool(seen), Tool("spawn", "runs a subagent", OBJ, spawn)]
    agent = make_agent(
        tool_call("spawn"),  # the parent
        tool_call("peek"),  # the child
        text("child done"),
        text("parent done"),
        plugins=[plugin(*tools)],
        home=tmp_path,
        config={},
    )
    assert agent.chat("go") == "parent done"
    (child,) = seen
    assert child.session_id != agent.session_id
    assert child.hermes_home == tmp_path
    assert child.session_store is agent.session_store


def test_default_home_follows_the_cores_rules(tmp_path):
    explicit = {"HERMES_HOME": "~/elsewhere", "HOME": str(tmp_path)}
    assert default_home(explicit) == Path("~/elsewhere").expanduser()
    assert default_home({"HOME": str(tmp_path)}) == tmp_path / ".hermes"
    for environ in (explicit, {"HOME": str(tmp_path)}):
        assert resolve_home(environ=environ) == default_home(environ)
    assert resolve_home("work", environ=explicit) == default_home(explicit) / "profiles" / "work"
