"""A host's configuration with overrides on top, asked for again and again as a long-running
process does (the gateway: each user's turns in their own folder): every run gets exactly its
own overrides, whatever the order."""

from __future__ import annotations

from typing import Any

from hermes_core.host import Host
from hermes_core.loop.runner import HostRunner
from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import ScriptedModel, make_agent, tool_call
from hermes_hookspecs import AgentTask, Tool, Toolset, hookimpl


class _Where:
    """A tool that answers with the ``terminal.cwd`` its run was configured with."""

    @staticmethod
    def where(args: dict[str, Any], ctx: Any) -> str:
        return str((ctx.config.get("terminal") or {}).get("cwd"))

    @hookimpl
    def hermes_register_toolsets(self, register: Any) -> None:
        register(
            Toolset(
                name="where",
                tools=[
                    Tool(
                        name="where",
                        description="the configured working folder",
                        parameters={"type": "object", "properties": {}},
                        handler=self.where,
                    )
                ],
            )
        )


def _answer(request: Any) -> Any:
    last = request.messages[-1]
    return tool_call("where") if last["role"] == "user" else f"cwd={last['content']}"


def _runner(tmp_path: Any) -> HostRunner:
    model = ScriptedModel(fn=_answer)
    agent = make_agent(model=model, plugins=[_Where()], config={"toolsets": ["where"]})
    store = SQLiteSessionStore(tmp_path / "state.db")
    return HostRunner(
        Host(config=agent.config, plugins=agent.plugins, session_store=store, client=model)
    )


def test_alternating_overrides_each_apply_to_their_own_runs_only(tmp_path):
    runner = _runner(tmp_path)
    folders = [str(tmp_path / name) for name in ("alice", "bob", "carol")]
    for folder in folders:
        (tmp_path / folder).mkdir()
    order = [0, 1, 0, 2, 1, 1, 0, 2]
    answers = [
        runner.run(
            AgentTask(prompt="where?", config_overrides={"terminal": {"cwd": folders[n]}})
        ).text
        for n in order
    ]
    assert answers == [f"cwd={folders[n]}" for n in order]


def test_the_same_overrides_as_a_new_mapping_give_the_same_configuration(tmp_path):
    host = _runner(tmp_path).host
    first = host.with_overrides({"terminal": {"cwd": "/one"}, "toolsets": ["where"]})
    again = host.with_overrides({"toolsets": ["where"], "terminal": {"cwd": "/one"}})
    other = host.with_overrides({"terminal": {"cwd": "/two"}, "toolsets": ["where"]})
    assert again.config.data == first.config.data
    assert other.config.get("terminal")["cwd"] == "/two"
    assert first.config.get("terminal")["cwd"] == "/one"
    assert first.session_store is host.session_store is other.session_store
