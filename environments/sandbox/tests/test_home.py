"""The home folder in the sandbox on its own: ``home_allow`` as configured, the checks of an
allowed path, the filtered git configuration, and what a command run through
``Sandbox.command`` sees of the home folder (real bubblewrap)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hermes_env_sandbox import (
    DEFAULT_HOME_ALLOW,
    HIDDEN_IN_HOME,
    HomeAllow,
    Sandbox,
    SandboxSettings,
    SandboxUnavailable,
    check_start,
    sanitized_git_config,
    settings_from_config,
    settings_problems,
    unavailable_reason,
)

needs_sandbox = pytest.mark.skipif(
    unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}"
)
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SECRET = "home-canary-51d0e2"


def test_home_allow_as_configured():
    def read(value: object) -> tuple[HomeAllow, ...]:
        return settings_from_config({"terminal": {"sandbox": {"home_allow": value}}}).home_allow

    assert read("~/.tool") == (HomeAllow("~/.tool"),)
    assert read(["~/.a", {"path": "~/.cache/b", "writable": True}]) == (
        HomeAllow("~/.a"),
        HomeAllow("~/.cache/b", writable=True),
    )
    assert read({"path": "/home/me/.c"}) == (HomeAllow("/home/me/.c"),)
    assert settings_from_config({}).home_allow == ()


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("relative/path", "must start with ~/ or /"),
        ([{"path": "~/.a", "writeable": True}], "{path: ~/..., writable: true}"),
        ([{"path": "~/.a", "writable": "yes"}], "{path: ~/..., writable: true}"),
        ([3], "must be a list of paths"),
        ([""], "must be a list of paths"),
    ],
)
def test_bad_home_allow_is_one_readable_line(value, fragment):
    [problem] = settings_problems({"terminal": {"sandbox": {"home_allow": value}}})
    assert fragment in problem and "\n" not in problem


def test_no_builtin_allowed_path_holds_a_credential_folder():
    for allowed in DEFAULT_HOME_ALLOW:
        base = allowed.split("*")[0].rstrip("/")
        for hidden in HIDDEN_IN_HOME:
            assert not (hidden + "/").startswith(base + "/"), (allowed, hidden)
            assert not (base + "/").startswith(hidden + "/"), (allowed, hidden)


@pytest.fixture
def home() -> Iterator[Path]:
    """A home folder outside /tmp with a secret, a credential folder and hermes's home; the
    workspace ``project`` and the task's /tmp beside it."""
    root = Path(tempfile.mkdtemp(prefix="hermes-test-home-", dir="/var/tmp"))
    home = root / "home"
    (home / ".newtool").mkdir(parents=True)
    (home / ".newtool" / "token").write_text(f"{SECRET}\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text(f"{SECRET}\n")
    (home / ".hermes").mkdir()
    (home / "project").mkdir()
    (root / "tmp").mkdir()
    yield home
    subprocess.run(["chmod", "-R", "u+w", str(root)], check=False)
    shutil.rmtree(root, ignore_errors=True)


def box(user: Path, settings: SandboxSettings | None = None, **kwargs: object) -> Sandbox:
    """A sandbox over ``~/project`` with ``user`` as the home folder (unless ``kwargs`` say)."""
    options: dict[str, object] = {
        "workspace": str(user / "project"),
        "tmp": str(user.parent / "tmp"),
        "hermes_home": str(user / ".hermes"),
        "home": str(user),
        "search_path": "/usr/bin:/bin",
        **kwargs,
    }
    return Sandbox(settings or SandboxSettings(), **options)  # type: ignore[arg-type]


def run_in(sandbox: Sandbox, script: str, protect: bool = True) -> str:
    """The output of ``script`` run by bash in ``sandbox``, from the workspace."""
    argv, fds = sandbox.command(["bash", "-c", script], cwd=sandbox.workspace, protect=protect)
    env = {"PATH": "/usr/bin:/bin", "HOME": sandbox.home, "LC_ALL": "C"}
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=60, pass_fds=fds, check=False, env=env
        )
    finally:
        for fd in fds:
            os.close(fd)
    return done.stdout + done.stderr


@pytest.mark.parametrize(
    "allowed, fragment",
    [
        ("~/.ssh", "is ~/.ssh, which stays hidden"),
        ("~", "is not a path inside the home folder"),
        ("~/../elsewhere", "is not a path inside the home folder"),
        ("~/.link-to-ssh", "is ~/.ssh, which stays hidden"),
        ("~/.ssh/keys", "lies in ~/.ssh, which stays hidden"),
        ("~/.link-to-tmp", "which commands do not see"),
        ("~/.link-to-root", "holds the whole home folder"),
        ("~/.aws-parent", "holds ~/.aws-parent/x"),
    ],
)
def test_an_allowed_path_is_checked_where_it_leads(home, allowed, fragment):
    (home / ".link-to-ssh").symlink_to(home / ".ssh")
    (home / ".link-to-tmp").symlink_to("/tmp")
    (home / ".link-to-root").symlink_to("/")
    settings = SandboxSettings(hide=("~/.aws-parent/x",), home_allow=(HomeAllow(allowed),))
    with pytest.raises(SandboxUnavailable) as refused:
        check_start(
            settings,
            workspace=str(home / "project"),
            hermes_home=str(home / ".hermes"),
            home=str(home),
        )
    assert fragment in str(refused.value) and refused.value.rule == "sandbox-home-allow"


def test_off_checks_nothing(home):
    settings = SandboxSettings("off", home_allow=(HomeAllow("~/.ssh"),))
    check_start(settings, workspace=str(home), hermes_home=str(home / ".hermes"), home=str(home))


@needs_sandbox
def test_the_home_folder_shows_only_what_is_allowed(home):
    (home / ".cargo" / "bin").mkdir(parents=True)
    (home / ".cargo" / "bin" / "tool").write_text("#!/bin/sh\necho tool-ran\n")
    (home / ".cargo" / "bin" / "tool").chmod(0o755)
    (home / ".cargo" / "credentials.toml").write_text(f"token = '{SECRET}'\n")
    (home / "bin").mkdir()  # on PATH: shown
    (home / "bin" / "mine").write_text("mine\n")
    sandbox = box(home, search_path=f"{home}/bin:{home}:/usr/bin:/bin")
    out = run_in(
        sandbox,
        "ls -A ~; ~/.cargo/bin/tool; cat ~/bin/mine; cat ~/.cargo/credentials.toml 2>&1; "
        "touch ~/new 2>&1; grep -rs home-canary ~; echo done",
    )
    assert SECRET not in out and "done" in out
    listed = out.split("tool-ran")[0].split()
    assert sorted(listed) == [".cargo", "bin", "project"]
    assert "mine" in out and "Read-only file system" in out
    assert not (home / "new").exists()
    assert "home folder hidden" in sandbox.describe()


@needs_sandbox
def test_without_descriptors_allowed_paths_are_bound_by_name_but_not_through_the_workspace(home):
    """The MCP plugin runs servers with ``protect=False`` (it cannot pass descriptors)."""
    (home / ".pyenv").mkdir()
    (home / ".pyenv" / "version").write_text("3.12\n")
    (home / "project" / "tools").mkdir()
    (home / ".tool").symlink_to(home / "project" / "tools")
    (home / "project" / "tools" / "readme").write_text("tools\n")
    settings = SandboxSettings(home_allow=(HomeAllow("~/.tool"),))
    argv, fds = box(home, settings).command(["true"], cwd=str(home), protect=False)
    assert fds == []
    assert f"{home}/.pyenv" in argv and f"{home}/.tool" not in argv
    out = run_in(box(home, settings), "cat ~/.pyenv/version; ls ~/.tool 2>&1", protect=False)
    assert "3.12" in out and "No such file" in out


@needs_sandbox
def test_an_allowed_path_is_writable_only_where_marked_and_never_in_read_only(home):
    (home / ".cache" / "tool").mkdir(parents=True)
    allowed = (HomeAllow("~/.cache/tool", writable=True),)
    out = run_in(
        box(home, SandboxSettings(home_allow=allowed)),
        "echo a > ~/.cache/tool/x; cat ~/.cache/tool/x",
    )
    assert out == "a\n"
    read_only = SandboxSettings(profile="read-only", home_allow=allowed)
    out = run_in(box(home, read_only), "echo b > ~/.cache/tool/x 2>&1; cat ~/.cache/tool/x")
    assert "Read-only file system" in out and (home / ".cache" / "tool" / "x").read_text() == "a\n"


@needs_sandbox
def test_a_gateway_workspace_in_hermes_home_in_the_home_folder(home):
    """Hermes's home inside the hidden home folder, the workspace inside it: the workspace
    shows, nothing else of either."""
    workspace = home / ".hermes" / "workspaces" / "alice"
    workspace.mkdir(parents=True)
    (home / ".hermes" / "state.db").write_text(f"{SECRET}\n")
    sandbox = box(home, workspace=str(workspace))
    out = run_in(sandbox, f"echo mine > mine && ls -A ~ ~/.hermes; cat {home}/.hermes/state.db")
    assert SECRET not in out and (workspace / "mine").exists()
    listed = out.split("cat:")[0]
    assert "workspaces" in listed and "state.db" not in listed and "project" not in listed


def test_a_home_folder_under_tmp_or_holding_nothing_is_not_hidden(home):
    with tempfile.TemporaryDirectory() as under_tmp:
        assert not box(home, home=under_tmp).home_hidden
    assert not box(home, home="/nonexistent").home_hidden
    assert not box(home, workspace=str(home.parent)).home_hidden  # the workspace holds it
    assert box(home).home_hidden


@needs_git
def test_the_git_configuration_is_filtered(tmp_path):
    source = tmp_path / "gitconfig"
    source.write_text(
        '[user]\n\tname = Ada \\"the\\" Tester\n\temail = ada@example.test\n'
        "\tpassword = s3cret-1\n"
        "[core]\n\teditor = vim\n\taskPass = /usr/bin/ask\n"
        "[alias]\n\tst = status -sb\n\tpushit = !curl -H 'Authorization: token s3cret-2' x\n"
        "[credential]\n\thelper = store\n"
        '[credential "https://host"]\n\tusername = ada\n'
        "[http]\n\textraHeader = X-Token: s3cret-3\n\tsslVerify = true\n"
        "\tproxy = http://ada:s3cret-4@proxy:3128\n"
        '[url "https://ada:s3cret-5@git.example/"]\n\tinsteadOf = https://git.example/\n'
        '[url "ssh://git@github.com/"]\n\tinsteadOf = https://github.com/\n'
        "[include]\n\tpath = ~/.gitconfig-work\n"
        "[sendemail]\n\tsmtpPass = s3cret-6\n"
        "[github]\n\ttoken = s3cret-7\n"
        "[init]\n\tdefaultBranch = main\n"
    )
    text = (sanitized_git_config(str(source)) or b"").decode()
    assert "s3cret" not in text and "credential" not in text and "include" not in text
    copy = tmp_path / "copy"
    copy.write_bytes(text.encode())
    listed = subprocess.run(
        ["git", "config", "--file", str(copy), "--list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert listed == [
        'user.name=Ada "the" Tester',
        "user.email=ada@example.test",
        "core.editor=vim",
        "alias.st=status -sb",
        "http.sslverify=true",
        "url.ssh://git@github.com/.insteadof=https://github.com/",
        "init.defaultbranch=main",
    ]
    assert sanitized_git_config(str(tmp_path / "missing")) is None
    (tmp_path / "broken").write_text("[user\nname = x\n")
    assert sanitized_git_config(str(tmp_path / "broken")) is None


def test_the_hidden_paths_are_the_shared_secret_classes():
    """One list: what the sandbox hides is what hermes_runtime's secret classes name, so a new
    class there is hidden here and recognised by the command policy alike."""
    from hermes_runtime.secret_classes import secret_classes

    named = {p for c in secret_classes() for p in c.home}
    assert set(HIDDEN_IN_HOME) == named
    assert {".ssh", ".password-store", ".mozilla", ".bash_history", ".config/rclone"} <= named


def test_an_allowed_path_holding_a_secret_class_is_refused():
    from hermes_env_sandbox.home import entry_problem

    home = "/home/u"
    hidden = [f"{home}/{p}" for p in HIDDEN_IN_HOME]
    assert "stays hidden" in (
        entry_problem(f"{home}/.config", f"{home}/.config", home, hidden) or ""
    )
    assert entry_problem(f"{home}/.cargo/bin", f"{home}/.cargo/bin", home, hidden) is None
