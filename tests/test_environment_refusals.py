"""An execution environment refused by a security policy reaches the model as a refusal
(``BLOCKED:``, the policy's rule, do not retry) from every tool that needs the environment; one
that merely cannot start stays an error."""

from __future__ import annotations

import pytest

from hermes_core.testing import make_agent, text, tool_call
from hermes_hookspecs import EnvironmentRefused, EnvironmentUnavailable, hookimpl
from hermes_hookspecs.refusals import is_blocked

REFUSAL = (
    "guarded backend: refusing a mount of the host's root; set guarded.allow: true to allow it"
)


class Backends:
    """Registers ``guarded`` (refused by policy) and ``broken`` (cannot start)."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def refused(self, config, task_id):
        self.made.append(task_id)
        raise EnvironmentRefused(REFUSAL, rule="guarded-mounts")

    def broken(self, config, task_id):
        raise EnvironmentUnavailable("broken backend: no engine at /nowhere.sock")

    @hookimpl
    def hermes_register_environments(self, register):
        register("guarded", self.refused)
        register("broken", self.broken)


CALLS = [
    ("terminal", {"command": "touch /rootfs/etc/owned"}),
    ("process", {"action": "list"}),
    ("read_file", {"path": "notes.txt"}),
    ("write_file", {"path": "notes.txt", "content": "x"}),
    ("search_files", {"pattern": "TODO"}),
]


def tool_results(backend: str) -> list[str]:
    agent = make_agent(
        *[tool_call(name, args) for name, args in CALLS],
        text("done"),
        plugins=["terminal", "file", Backends()],
        config={"terminal": {"backend": backend}, "approvals": {"mode": "yolo"}},
    )
    try:
        agent.chat("go")
        return [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()


def test_a_refused_environment_is_a_refusal_for_every_tool():
    results = tool_results("guarded")
    assert len(results) == len(CALLS)
    for result in results:
        assert result.startswith("BLOCKED: the execution environment was refused: guarded backend")
        assert "(rule guarded-mounts)" in result and "Do not retry" in result
        assert "set guarded.allow: true" in result
        assert "\n" not in result


def test_an_environment_that_cannot_start_stays_an_error():
    for result in tool_results("broken"):
        assert not is_blocked(result)
        assert "the execution environment is not available: broken backend" in result


def test_the_refusal_is_an_environment_unavailable_with_its_rule():
    refusal = EnvironmentRefused("no", rule="r")
    assert isinstance(refusal, EnvironmentUnavailable) and refusal.rule == "r"
    assert EnvironmentRefused("no").rule == "environment-policy"
    with pytest.raises(EnvironmentUnavailable):
        raise refusal
