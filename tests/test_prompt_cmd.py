"""``hermes prompt show`` (a command of the core): the prompt a new session would get, layer by
layer, from the default prompt layers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_core.cli.app import BUILTIN_COMMANDS
from hermes_core.cli.prompt_cmd import approx_tokens, prompt_group
from hermes_core.cli.state import CliState
from hermes_core.testing import ScriptedModel, text
from hermes_core.testing.kit import scripted_provider_plugin

ENTRY_POINTS = [
    "prompt_identity",
    "prompt_environment",
    "prompt_platform",
    "prompt_project_context",
    "prompt_session_facts",
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "AGENTS.md").write_text("Run the tests with tox.\n")
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def state(hermes_home: Path, project: Path) -> CliState:
    """The CLI state of `hermes --plugins <the prompt layers>` with a scripted provider."""
    cli_state = CliState(
        plugin_names=list(ENTRY_POINTS),
        extra_plugins=[("scripted-provider", scripted_provider_plugin(ScriptedModel()))],
    )
    cli_state.overrides = {"model.provider": "scripted", "model.default": "model-x"}
    return cli_state


def show(state: CliState, *args: str):
    result = CliRunner().invoke(prompt_group, ["show", *args], obj=state)
    assert result.exit_code == 0, result.output
    return result


def test_raw_is_exactly_the_prompt_a_new_session_gets(state, make_agent):
    raw = show(state, "--raw").output
    agent = make_agent(
        text("ok"),
        plugin_manager=state.plugins,
        config=state.config,
        platform="cli",
        session_store=make_agent().session_store,
    )
    agent.chat("hello")
    assert raw == agent.system_prompt + "\n"
    assert "Model: model-x\nProvider: scripted" in raw


def test_table_lists_each_layer_then_the_prompt(state):
    output = show(state).output
    header, _, rest = output.partition("\n\n")
    assert header == "System prompt of a new cli session (model model-x, provider scripted)"
    table, _, prompt = rest.partition("\n\n")
    rows = table.splitlines()
    assert rows[0].split() == ["layer", "tier", "plugin", "chars", "~tokens"]
    assert [row.split()[:3] for row in rows[1:6]] == [
        ["identity", "stable", "prompt_identity"],
        ["environment", "stable", "prompt_environment"],
        ["platform", "stable", "prompt_platform"],
        ["project_context", "context", "prompt_project_context"],
        ["session_facts", "volatile", "prompt_session_facts"],
    ]
    total = rows[-1].split()
    assert total[0] == "total"
    assert prompt.rstrip("\n") == show(state, "--raw").output.rstrip("\n")
    assert total[1] == f"{len(prompt.rstrip(chr(10))):,}"


def test_json_lists_layers_with_sizes(state):
    document = json.loads(show(state, "--json").output)
    layers = document["layers"]
    assert [entry["name"] for entry in layers] == [
        "identity",
        "environment",
        "platform",
        "project_context",
        "session_facts",
    ]
    for entry in layers:
        assert set(entry) == {"name", "tier", "order", "plugin", "chars", "tokens", "text"}
        assert entry["chars"] == len(entry["text"])
        assert entry["tokens"] == approx_tokens(entry["chars"])
        assert entry["text"] in document["prompt"]
    assert document["prompt"] == "\n\n".join(entry["text"] for entry in layers)
    assert document["chars"] == len(document["prompt"])
    assert (document["model"], document["provider"], document["platform"]) == (
        "model-x",
        "scripted",
        "cli",
    )
    assert document["notes"] == []


def test_tokens_are_four_characters_rounded_up():
    assert [approx_tokens(n) for n in (0, 1, 4, 5, 400)] == [0, 1, 1, 2, 100]


def test_platform_option(state):
    cron = show(state, "--raw", "--platform", "cron").output
    assert "no user is present" in cron
    library = show(state, "--raw", "--platform", "library").output
    assert "terminal" not in library and "no user is present" not in library


def test_json_and_raw_together_is_a_usage_error(state):
    result = CliRunner().invoke(prompt_group, ["show", "--json", "--raw"], obj=state)
    assert result.exit_code == 2
    assert "cannot be used together" in result.output


def test_an_unresolvable_provider_still_shows_the_prompt(state):
    state.overrides = {"model.provider": "nowhere", "model.default": "model-y"}
    result = show(state)
    assert "note: model and provider taken from the configuration" in result.output
    assert "Model: model-y\nProvider: nowhere" in result.output


def test_no_layers(hermes_home, project):
    empty = CliState(plugin_names=["no-such-plugin"])
    assert "the system prompt is empty" in show(empty).output
    assert show(empty, "--raw").output == "\n"


def test_group_short_help_fits():
    assert len(prompt_group.get_short_help_str(limit=200)) <= 80


@pytest.mark.skipif("prompt" not in BUILTIN_COMMANDS, reason="`hermes prompt` not registered yet")
def test_through_the_hermes_command(hermes_cli, project):
    args = ["--plugins", ",".join(ENTRY_POINTS), "prompt", "show", "--raw"]
    result = hermes_cli(*args, env={"HERMES_MODEL": "model-z"}, model=ScriptedModel())
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("You are Hermes")
    assert "Run the tests with tox." in result.stdout


def test_the_catalogue_of_deferred_tools_ends_the_prompt_as_in_a_session(state, make_agent):
    from hermes_core.testing import toolset_plugin
    from hermes_hookspecs import Tool

    tools = [Tool(f"mcp_x_t{i}", f"Tool {i} of x.", {"type": "object"}, str) for i in range(25)]
    state.extra_plugins.append(("mcp-x", toolset_plugin(*tools, name="mcp-x")))
    raw = show(state, "--raw").output
    agent = make_agent(
        text("ok"),
        plugin_manager=state.plugins,
        config=state.config,
        platform="cli",
        session_store=make_agent().session_store,
    )
    agent.chat("hello")
    assert raw == agent.system_prompt + "\n"
    assert "# Tool catalogue" in raw and "[mcp-x] mcp_x_*" in raw
    table = show(state).output
    assert "tool_catalogue" in table and "tools.defer" in table
