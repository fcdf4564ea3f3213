"""A ``config.yaml`` the real Hermes agent 0.19 wrote (side environment from the registry, as in
``test_hermes_agent_sessions``): its keys are accepted silently, those hermes shares are
honoured, and ``hermes doctor`` lists once each key it does not honour, with what it does
instead."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.test_hermes_agent_sessions import _run_agent, agent_python  # noqa: F401

SAVE = (
    "import copy, sys, yaml\n"
    "from hermes_cli.config import DEFAULT_CONFIG, save_config\n"
    "save_config(copy.deepcopy(DEFAULT_CONFIG))\n"
)
"""The agent's own save of its defaults (it writes ``_config_version`` and comments)."""

DUMP = (
    "import sys, yaml\n"
    "from hermes_cli.config import DEFAULT_CONFIG\n"
    "open(sys.argv[1], 'w').write(yaml.safe_dump(DEFAULT_CONFIG, sort_keys=False))\n"
)
"""Every key the agent has, with its default value (a home where each one was set)."""


def test_the_config_the_agent_saves_is_accepted_silently(
    agent_python: Path,  # noqa: F811
    hermes_home: Path,
    hermes_cli: Callable[..., Any],
) -> None:
    _run_agent(agent_python, hermes_home, code=SAVE)
    text = (hermes_home / "config.yaml").read_text(encoding="utf-8")
    assert "_config_version:" in text
    run = hermes_cli("tools", "list")
    assert run.exit_code == 0, run.stderr
    assert "warning" not in run.stderr and "_config_version" not in run.stderr


@pytest.fixture
def every_agent_key(agent_python: Path, hermes_home: Path) -> Path:  # noqa: F811
    """The home's config.yaml holding every key of the agent with its default."""
    path = hermes_home / "config.yaml"
    _run_agent(agent_python, hermes_home, str(path), code=DUMP)
    return path


def test_every_agent_key_is_accepted_and_its_toolsets_mean_the_defaults(
    every_agent_key: Path, hermes_cli: Callable[..., Any]
) -> None:
    run = hermes_cli("tools", "list")
    assert run.exit_code == 0, run.stderr
    assert run.stderr.strip() == ""  # no unknown-key warning, no error, no unknown toolset
    enabled = [line.split()[1] for line in run.stdout.splitlines() if " enabled " in line]
    assert "terminal" in enabled and "read_file" in enabled  # toolsets: [hermes-cli]


def test_doctor_lists_each_agent_key_not_honoured_once(
    every_agent_key: Path, hermes_cli: Callable[..., Any]
) -> None:
    run = hermes_cli("doctor", "--no-network")
    lines = [line for line in run.stdout.splitlines() if "Hermes agent" in line]
    keys = [line.split("'")[1] for line in lines]
    assert len(keys) == len(set(keys)), "a key listed twice"
    by_key = dict(zip(keys, lines, strict=True))
    assert "web" not in by_key and "browser" not in by_key  # their toolsets are installed here
    assert "no speech" in by_key["tts"]
    assert "asks before dangerous actions" in by_key["approvals.mode"]
    assert "default applies" in by_key["terminal.docker_network"]  # its bool is not our string
    assert "terminal.backend" not in by_key and "agent.max_turns" not in by_key  # honoured
    assert all(line.startswith("--") for line in lines)  # notes, not errors


def test_a_misspelt_key_of_ours_still_warns(hermes_home: Path, hermes_cli: Callable[..., Any]):
    (hermes_home / "config.yaml").write_text(
        "_config_version: 33\nagent:\n  max_turnz: 5\n", encoding="utf-8"
    )
    run = hermes_cli("tools", "list")
    assert "did you mean 'agent.max_turns'" in run.stderr
    assert "_config_version" not in run.stderr
