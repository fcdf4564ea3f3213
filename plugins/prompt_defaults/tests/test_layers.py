"""The default prompt layers, loaded through their real entry points with the hermes test kit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hermes_prompt_defaults import (
    environment,
    identity,
    platform_hint,
    project_context,
    session_facts,
)

from hermes_core.testing import load_plugin, plugin_manager, text
from hermes_hookspecs import PromptContext, PromptLayer, hookimpl

ENTRY_POINTS = [
    "prompt_identity",
    "prompt_environment",
    "prompt_platform",
    "prompt_project_context",
    "prompt_session_facts",
]
LAYER_NAMES = ["identity", "environment", "platform", "project_context", "session_facts"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory (not in a git repository) as the current directory."""
    folder = tmp_path / "work" / "project"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def build(make_agent, hermes_home: Path, project: Path):
    """Start a session with the given plugins and return the agent (its prompt is built)."""

    def run(
        plugins=ENTRY_POINTS,
        *,
        config=None,
        system_message=None,
        model=None,
        provider=None,
        **kwargs,
    ):
        config = dict(config or {})
        if model or provider:  # the names the kit's scripted model reports
            config["model"] = {"default": model, "provider": provider}
        store = make_agent().session_store  # the kit's in-memory store: no state.db in the home
        kwargs.setdefault("session_store", store)
        agent = make_agent(text("ok"), plugins=plugins, home=hermes_home, config=config, **kwargs)
        result = agent.run_conversation("hello", system_message=system_message)
        assert result["completed"], result["error"]
        return agent

    return run


def layer(agent, name: str) -> PromptLayer:
    found = [b.layer for b in agent.prompt_layers if b.layer.name == name]
    assert found, f"no layer {name!r} in {[b.layer.name for b in agent.prompt_layers]}"
    return found[0]


def names(agent) -> list[str]:
    return [b.layer.name for b in agent.prompt_layers]


def context(**kwargs) -> PromptContext:
    return PromptContext(**{"model": "m", "provider": "p", **kwargs})


# --- loading -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_each_layer_is_its_own_entry_point(name):
    record = load_plugin(name)
    # the layers that read configuration keys declare them
    declares = ("prompt_identity", "prompt_project_context", "prompt_environment")
    extra = ["hermes_register_config"] if name in declares else []
    assert record.hooks == ["hermes_prompt_layers", *extra]
    assert record.dist == "hermes-prompt-defaults"


def test_full_prompt_order(build, project):
    (project / "AGENTS.md").write_text("Run the tests with tox.\n")
    agent = build(model="gpt-test", provider="acme", platform="cli")
    assert names(agent) == LAYER_NAMES
    tiers = [(b.layer.tier, b.layer.order, b.plugin) for b in agent.prompt_layers]
    assert tiers == [
        ("stable", 0, "prompt_identity"),
        ("stable", 900, "prompt_environment"),
        ("stable", 910, "prompt_platform"),
        ("context", 50, "prompt_project_context"),
        ("volatile", 1000, "prompt_session_facts"),
    ]
    assert agent.system_prompt.startswith(identity.DEFAULT_IDENTITY)
    assert agent.system_prompt.endswith("Provider: acme")


def test_caller_system_message_comes_before_the_project_context(build, project):
    (project / "AGENTS.md").write_text("House rules.")
    agent = build(platform="library", system_message="You review pull requests.")
    assert names(agent) == [
        "identity",
        "environment",
        "system_message",
        "project_context",
        "session_facts",
    ]


# --- identity ----------------------------------------------------------------------------------


def test_default_identity(build):
    found = layer(build(), "identity")
    assert (found.tier, found.order) == ("stable", 0)
    assert found.text == identity.DEFAULT_IDENTITY
    assert "tools" in found.text and "Never invent tool results" in found.text


def test_soul_md_replaces_the_default_identity(build, hermes_home):
    (hermes_home / "SOUL.md").write_text("You are Ada, a careful release engineer.\n")
    agent = build()
    assert layer(agent, "identity").text == "You are Ada, a careful release engineer."
    assert identity.DEFAULT_IDENTITY not in agent.system_prompt


def test_blank_soul_md_falls_back_to_the_default(build, hermes_home):
    (hermes_home / "SOUL.md").write_text("  \n\n")
    assert layer(build(), "identity").text == identity.DEFAULT_IDENTITY


def test_long_soul_md_is_cut_with_a_marker(build, hermes_home):
    soul = "".join(f"line {i:04d} of the soul\n" for i in range(500))
    (hermes_home / "SOUL.md").write_text(soul)
    found = layer(build(config={"prompt": {"soul_max_chars": 1000}}), "identity").text
    assert found.startswith("line 0000 of the soul")
    assert found.endswith("line 0499 of the soul")
    assert "characters of SOUL.md cut here" in found
    assert len(found) < 1200


# --- environment -------------------------------------------------------------------------------


def test_environment_hints(build, project, monkeypatch):
    import platform

    monkeypatch.setenv("SHELL", "/bin/zsh")
    found = layer(build(), "environment")
    assert (found.tier, found.order) == ("stable", 900)
    assert found.text.startswith("# Environment\n- Operating system: ")
    assert "- Shell: /bin/zsh" in found.text
    assert f"- Working directory: {project}" in found.text
    assert f"- Python: {platform.python_version()}" in found.text
    assert "backend" not in found.text


def test_environment_names_a_backend_that_is_not_local(build):
    found = layer(build(config={"terminal": {"backend": "docker"}}), "environment")
    assert "- Execution backend: docker." in found.text


def test_environment_names_the_terminal_cwd_when_different(build):
    found = layer(build(config={"terminal": {"cwd": "/srv/app"}}), "environment")
    assert "- Working directory of terminal commands: /srv/app" in found.text


def test_environment_without_a_shell():
    text_ = environment.environment_text(context(cwd="/x"), environ={})
    assert "Shell" not in text_


# --- platform ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "needle"),
    [("cli", "terminal"), ("cron", "no user is present"), ("gateway", "chat app")],
)
def test_platform_hint(build, platform, needle):
    found = layer(build(platform=platform), "platform")
    assert (found.tier, found.order) == ("stable", 910)
    assert needle in found.text


@pytest.mark.parametrize("platform", ["library", "something-else"])
def test_no_platform_hint(build, platform):
    assert "platform" not in names(build(platform=platform))


# --- project context ---------------------------------------------------------------------------


def test_agents_md_in_the_working_directory(build, project):
    (project / "AGENTS.md").write_text("Use tabs.\n")
    found = layer(build(), "project_context")
    assert (found.tier, found.order) == ("context", 50)
    assert found.text.startswith("# Project context: AGENTS.md\n")
    assert found.text.endswith("\n\nUse tabs.")


def test_precedence_among_working_directory_files(build, project):
    (project / ".cursorrules").write_text("cursor")
    assert layer(build(), "project_context").text.endswith("cursor")
    (project / "CLAUDE.md").write_text("claude")
    assert layer(build(), "project_context").text.endswith("claude")
    (project / "AGENTS.md").write_text("agents")
    found = layer(build(), "project_context").text
    assert found.endswith("agents")
    assert "claude" not in found and "cursor" not in found  # one file only


def test_hermes_md_wins_and_dot_hermes_md_before_hermes_md(build, project):
    (project / "AGENTS.md").write_text("agents")
    (project / "HERMES.md").write_text("upper")
    assert layer(build(), "project_context").text.endswith("upper")
    (project / ".hermes.md").write_text("dot")
    found = layer(build(), "project_context").text
    assert found.startswith("# Project context: .hermes.md\n")
    assert found.endswith("dot")


def test_hermes_md_is_found_up_to_the_git_root(build, project):
    root = project.parent  # tmp/work is the repository, tmp/work/project the cwd
    (root / ".git").mkdir()
    (root / ".hermes.md").write_text("from the repository root")
    (root.parent / ".hermes.md").write_text("outside the repository")
    (project / "AGENTS.md").write_text("agents")
    found = layer(build(), "project_context").text
    assert found.startswith("# Project context: ../.hermes.md\n")
    assert found.endswith("from the repository root")


def test_the_nearest_hermes_md_wins(build, project):
    (project.parent / ".git").write_text("gitdir: elsewhere\n")  # a worktree: .git is a file
    (project.parent / "HERMES.md").write_text("outer")
    (project / "HERMES.md").write_text("inner")
    assert layer(build(), "project_context").text.endswith("inner")


def test_no_walk_above_the_git_root(build, project):
    (project / ".git").mkdir()
    (project.parent / ".hermes.md").write_text("above the repository")
    assert "project_context" not in names(build())


def test_outside_a_repository_only_the_working_directory_counts(build, project):
    (project.parent / ".hermes.md").write_text("parent folder, no repository")
    assert "project_context" not in names(build())


def test_blank_files_are_passed_over(build, project):
    (project / ".hermes.md").write_text("\n \n")
    (project / "AGENTS.md").write_text("agents")
    assert layer(build(), "project_context").text.endswith("agents")


def test_a_folder_named_like_a_context_file_is_ignored(build, project):
    (project / "AGENTS.md").mkdir()
    (project / "CLAUDE.md").write_text("claude")
    assert layer(build(), "project_context").text.endswith("claude")


def test_long_context_file_keeps_head_and_tail(build, project):
    body = "".join(f"rule {i:05d}: keep it simple\n" for i in range(3000))  # 84,000 chars
    (project / "AGENTS.md").write_text(body)
    found = layer(build(), "project_context").text
    assert "rule 00000" in found and "rule 02999" in found
    assert "rule 01500" not in found
    marker = [line for line in found.splitlines() if line.startswith("[...")]
    assert len(marker) == 1
    kept = [line for line in found.splitlines() if line.startswith("rule ")]
    cut = len(body.strip()) - sum(len(line) + 1 for line in kept) + 1
    assert marker[0] == (
        f"[... {cut:,} of {len(body.strip()):,} characters of AGENTS.md cut here;"
        " read the file for the full text ...]"
    )
    assert 17_000 < len(found) < 20_500


def test_context_file_limit_is_configurable(build, project):
    (project / "AGENTS.md").write_text("x" * 5000)
    found = layer(build(config={"prompt": {"project_context_max_chars": 1000}}), "project_context")
    assert "characters of AGENTS.md cut here" in found.text
    assert len(found.text) < 1300


def test_truncation_helper_edges():
    from hermes_prompt_defaults._text import truncate_middle

    assert truncate_middle("short", 10, "f") == "short"
    cut = truncate_middle("a" * 100, 10, "f")  # no newlines: cut at characters
    assert cut.startswith("aaaaaaa\n\n[... 91 of 100 characters of f cut here")
    assert cut.endswith("\n\naa")


# --- session facts -----------------------------------------------------------------------------


def test_session_facts_come_last(build):
    agent = build(model="gpt-test", provider="acme")
    found = layer(agent, "session_facts")
    assert (found.tier, found.order) == ("volatile", 1000)
    lines = found.text.splitlines()
    assert lines[0].startswith("Conversation started: ")
    date = lines[0].removeprefix("Conversation started: ")
    assert len(date) == 10 and date[4] == "-" and date[7] == "-"  # a date, no time
    assert lines[1:] == ["Model: gpt-test", "Provider: acme"]
    assert names(agent)[-1] == "session_facts"


def test_session_facts_leave_out_unknown_values():
    assert session_facts.facts_text(context(model="m", provider="", date="")) == "Model: m"


# --- replacing and disabling -------------------------------------------------------------------


class HouseIdentity:
    """A third-party plugin replacing the identity layer."""

    @hookimpl
    def hermes_prompt_layers(self, context):
        return PromptLayer(name="identity", text="You are the Acme assistant.", order=500)


def test_a_later_plugin_replaces_a_layer_in_its_place(build):
    agent = build([*ENTRY_POINTS, HouseIdentity()])
    assert names(agent) == ["identity", "environment", "platform", "session_facts"]
    replaced = agent.prompt_layers[0]
    assert replaced.plugin == "HouseIdentity"
    assert agent.system_prompt.startswith("You are the Acme assistant.\n\n# Environment")
    assert identity.DEFAULT_IDENTITY not in agent.system_prompt


def test_a_disabled_layer_is_left_out(build):
    manager = plugin_manager(ENTRY_POINTS, disabled=["prompt_platform"])
    agent = build(plugin_manager=manager)
    assert manager.records["prompt_platform"].status == "disabled"
    assert names(agent) == ["identity", "environment", "session_facts"]


def test_each_layer_works_alone(build):
    for entry_point, name in zip(ENTRY_POINTS, LAYER_NAMES, strict=True):
        if name == "project_context":
            continue  # empty without a file
        assert names(build([entry_point])) == [name]


# --- stability ---------------------------------------------------------------------------------


def test_byte_stable_across_builds(build, project, hermes_home):
    (hermes_home / "SOUL.md").write_text("Soul ü ✓\r\nsecond line\n")
    (project / "AGENTS.md").write_text("Rules\r\n- one\r\n")
    first = build(model="m", provider="p", config={"terminal": {"backend": "ssh"}})
    second = build(model="m", provider="p", config={"terminal": {"backend": "ssh"}})
    assert first.session_id != second.session_id
    assert first.system_prompt.encode() == second.system_prompt.encode()
    assert "\r" not in first.system_prompt


def test_the_hooks_are_pure_functions_of_their_context(project):
    ctx = context(cwd=str(project), date="2025-03-04", platform="gateway")
    for module in (environment, identity, platform_hint, project_context, session_facts):
        assert module.hermes_prompt_layers(ctx) == module.hermes_prompt_layers(ctx)


def test_no_subprocess_is_started(build, project, monkeypatch):
    (project / ".git").mkdir()

    def refuse(*args, **kwargs):
        raise AssertionError("a prompt layer started a subprocess")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    agent = build(config={"terminal": {"backend": "docker"}})
    assert names(agent)[:3] == ["identity", "environment", "platform"]
