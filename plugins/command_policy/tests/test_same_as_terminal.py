"""``hermes approvals check`` decides exactly as the terminal tool does for the same folder,
home folder and configuration: both go through :func:`hermes_policy_commands.situated.
judge_command`, and this test compares them on the corpora (the everyday one, the dangerous
families and their look-alikes), with the sandbox off and on. Nothing is run: the terminal's
decision is taken from its guard's findings, not from running the command."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_FAMILIES = _module("dangerous_families")
_EVERYDAY = _module("test_unreadable")
CORPUS = list(dict.fromkeys(_EVERYDAY.EVERYDAY + _FAMILIES.dangerous() + _FAMILIES.look_alikes()))


def _cli(workspace: Path, home: Path, hermes_home: Path) -> list[str]:
    code = (
        "import sys; from hermes_core.cli import console_main; sys.argv[0] = 'hermes'; "
        "sys.exit(console_main())"
    )
    argv = ["approvals", "check", "--json", "--workdir", str(workspace)]
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        input="".join(json.dumps(c) + "\n" for c in CORPUS),
        capture_output=True,
        text=True,
        env={"HERMES_HOME": str(hermes_home), "PATH": "/usr/bin:/bin", "HOME": str(home)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["command"] for r in rows] == CORPUS
    return [r["decision"] for r in rows]


@pytest.mark.parametrize("sandbox", ["off", "workspace"])
def test_the_cli_decides_as_the_terminal(tmp_path, monkeypatch, sandbox):
    from hermes_env_local.environment import LocalEnvironment
    from hermes_env_sandbox import settings_from_config
    from hermes_toolset_terminal.policy import _findings

    from hermes_hookspecs import ToolContext

    home, hermes_home, workspace = tmp_path / "home", tmp_path / "hermes", tmp_path / "home/proj"
    for name, text in _EVERYDAY.SCRIPTS.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    hermes_home.mkdir()
    (hermes_home / "config.yaml").write_text(f"terminal:\n  sandbox: {sandbox}\n")
    cli = _cli(workspace, home, hermes_home)

    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))
    config = {"terminal": {"sandbox": sandbox, "cwd": str(workspace)}}  # as hermes chat sets it
    env = LocalEnvironment(
        cwd=str(workspace), sandbox=settings_from_config(config), hermes_home=str(hermes_home)
    )
    ctx = ToolContext(task_id="t", config=config)
    terminal = []
    for command in CORPUS:
        findings = _findings(command, ctx, env, None)
        hard = any(f.hard for f in findings)
        terminal.append("never" if hard else "ask" if findings else "allow")
    differ = [(c, a, b) for c, a, b in zip(CORPUS, cli, terminal, strict=True) if a != b]
    assert differ == []
    assert cli.count("allow") > 300 and len(cli) - cli.count("allow") > 300  # both kinds
