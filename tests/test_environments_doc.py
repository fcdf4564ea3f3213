"""The complete example backend of ``docs/environments.md`` works: the code on the page, as it
is, registers through the hook specs, checks its configuration, and passes the shared behaviour
suite every builtin backend passes."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pluggy
import pytest

from hermes_core.testing import make_agent, text, tool_call
from hermes_core.testing.environment_suite import EnvironmentBehaviour
from hermes_hookspecs import PROJECT_NAME, EnvironmentUnavailable, specs

PAGE = Path(__file__).resolve().parents[1] / "docs" / "environments.md"


def _example_source() -> str:
    """The Python block under the page's "A complete example" heading."""
    text_ = PAGE.read_text(encoding="utf-8")
    section = text_.split("\n## A complete example\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


def _load() -> types.ModuleType:
    module = types.ModuleType("docs_environments_example")
    sys.modules[module.__name__] = module
    exec(compile(_example_source(), str(PAGE), "exec"), module.__dict__)
    return module


example = _load()
SubprocessEnvironment = example.SubprocessEnvironment


class TestTheDocumentedBackend(EnvironmentBehaviour):
    timeout_slack = 3.0

    @pytest.fixture(scope="class")
    @classmethod
    def env(cls, tmp_path_factory):
        root = tmp_path_factory.mktemp("docs-example")
        environment = SubprocessEnvironment({"terminal": {"subprocess_root": str(root)}}, "docs")
        yield environment
        environment.cleanup()

    @pytest.fixture
    def disposable_env(self, tmp_path):
        config = {"terminal": {"subprocess_root": str(tmp_path)}}
        environment = SubprocessEnvironment(config, "docs-example-disposable")
        yield environment
        environment.cleanup()

    @pytest.fixture
    def observer(self, tmp_path):
        environment = SubprocessEnvironment({}, "docs-example-observer")
        yield environment
        environment.cleanup()


def test_it_registers_against_the_hook_specs():
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(specs)
    pm.register(example)
    pm.check_pending()
    registered = {}
    pm.hook.hermes_register_environments(register=registered.__setitem__)
    assert registered == {"subprocess": SubprocessEnvironment}


def test_its_configuration_check(tmp_path):
    assert SubprocessEnvironment.check_config({}) == []
    config = {"terminal": {"subprocess_root": "relative/folder"}}
    [problem] = SubprocessEnvironment.check_config(config)
    assert "terminal.subprocess_root must be an absolute path" in problem
    with pytest.raises(EnvironmentUnavailable, match="must be an absolute path"):
        SubprocessEnvironment(config, "t")


def test_the_model_uses_it_through_the_terminal_and_file_tools(tmp_path):
    class Plugin:
        hermes_register_environments = staticmethod(example.hermes_register_environments)

    agent = make_agent(
        tool_call("write_file", {"path": "hello.txt", "content": "from the docs\n"}),
        tool_call("terminal", {"command": "cat hello.txt && pwd"}),
        text("done"),
        plugins=["terminal", "file", Plugin()],
        config={
            "terminal": {"backend": "subprocess", "subprocess_root": str(tmp_path)},
            "approvals": {"mode": "yolo"},
        },
    )
    try:
        agent.chat("go")
        results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()
    assert (tmp_path / "hello.txt").read_text() == "from the docs\n"
    assert "from the docs" in results[1] and str(tmp_path) in results[1]
