"""``hermes doctor`` names the one command that installs a configured but missing backend."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_core.cli.install_hints import backend_install_command, checkout_root

ROOT = Path(__file__).resolve().parent.parent


def _doctor(home: Path, cwd: Path, backend: str) -> list[str]:
    (home / "config.yaml").write_text(f"terminal:\n  backend: {backend}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(home)
    hermes = Path(sys.executable).parent / "hermes"
    done = subprocess.run(
        [str(hermes), "--plugins", "local", "doctor", "--no-network"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return [line for line in done.stdout.splitlines() if "execution backend" in line]


@pytest.mark.parametrize("backend", ["docker", "ssh", "modal"])
def test_doctor_names_the_checkout_command_for_a_missing_backend(
    backend: str, tmp_path: Path
) -> None:
    [line] = _doctor(tmp_path, ROOT, backend)
    assert line.startswith(
        f"ERR  execution backend {backend!r} (terminal.backend) is not installed"
    )
    command = f"pip install -e ./environments/common -e ./environments/{backend}"
    assert line.endswith(f"install it with: {command}")
    assert "(installed: local)" in line


def test_outside_the_checkout_the_command_has_absolute_paths(tmp_path: Path) -> None:
    [line] = _doctor(tmp_path, tmp_path, "docker")
    assert line.endswith(f"pip install -e {ROOT}/environments/common -e {ROOT}/environments/docker")


def test_an_unknown_backend_gets_no_made_up_command(tmp_path: Path) -> None:
    [line] = _doctor(tmp_path, tmp_path, "kubernetes")
    assert "is not provided by any installed plugin" in line and "pip install" not in line


def test_an_installed_core_names_the_extra(tmp_path: Path) -> None:
    assert checkout_root() == ROOT
    not_a_checkout = tmp_path  # no pyproject.toml of the core dist there
    assert backend_install_command("ssh", root=not_a_checkout) == (
        'pip install "hermes-framework[ssh]"'
    )
    assert backend_install_command("local", root=not_a_checkout) is None


@pytest.mark.parametrize(
    ("command", "dist"),
    [("cron", "hermes-cron"), ("mcp", "hermes-toolset-mcp"), ("gateway", "hermes-gateway")],
)
def test_an_optional_command_not_installed_names_its_dist_in_one_line(
    hermes_cli: Any, command: str, dist: str
) -> None:
    run = hermes_cli("--plugins", "", command, "list")  # no plugin loaded: the command is absent
    assert run.exit_code == 2
    [line] = run.stderr.strip().splitlines()
    assert f"'hermes {command}' comes with the optional distribution {dist}" in line
    assert f"plugins/{command}" in line and line.count("pip install") == 1
    other = hermes_cli("--plugins", "", "nosuchcommand")
    assert other.exit_code == 2 and "No such command" in other.stderr
