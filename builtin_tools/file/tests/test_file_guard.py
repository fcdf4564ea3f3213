"""The workspace and secret-file checks of the file tools, through the real agent loop: a scripted
model asks for the tool, and canary files prove what was (not) written or shown."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from hermes_env_local import LocalEnvironment
from hermes_env_sandbox import SandboxSettings

from hermes_core.testing import make_agent, text, tool_call
from hermes_core.testing.services import service_variables, unavailable
from hermes_hookspecs import BLOCKED_MARKER, CommandResult, blocked, hookimpl

SECRET = "s3cr3t-canary-value"


@pytest.fixture
def box(tmp_path, monkeypatch):
    """A workspace, a folder beside it, and a fake home with secrets."""
    root = tmp_path.resolve()
    ws, outside, home, hermes_home = (root / n for n in ("ws", "outside", "home", "hermes-home"))
    for folder in (ws, outside, home / ".ssh", home / ".aws", hermes_home):
        folder.mkdir(parents=True)
    (home / ".ssh/id_rsa").write_text(f"-----BEGIN KEY-----\n{SECRET}\n")
    (home / ".aws/credentials").write_text(f"[default]\naws_secret_access_key = {SECRET}\n")
    (hermes_home / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    (outside / "existing.txt").write_text("original\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))
    monkeypatch.chdir(ws)
    return {"ws": ws, "outside": outside, "home": home, "hermes_home": hermes_home}


def run(box, *calls, config=None, plugins=("file", "local"), **kwargs):
    """One agent turn making ``calls`` (``(tool, args)``) in the workspace; the tool results.

    The sandbox is off: these are the file tools' own rules, which hold without it (with it,
    the file tools also see only what commands see: test_file_sight.py)."""
    merged = {"terminal": {"cwd": str(box["ws"]), "sandbox": "off"}}
    for key, value in (config or {}).items():
        merged[key] = {**merged.get(key, {}), **value}
    agent = make_agent(
        *[tool_call(name, args) for name, args in calls],
        text("done"),
        plugins=list(plugins),
        config=merged,
        **kwargs,
    )
    try:
        agent.chat("go")
        return [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()


def refusal(out):
    """The refusal text: it reaches the model exactly as made, starting with the marker."""
    assert out.startswith(BLOCKED_MARKER), out
    return out


class Approver:
    """An approval callback that records every request and answers from a list."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        return self.answers.pop(0) if self.answers else "deny"

    @property
    def keys(self):
        return [r.key for r in self.requests]


# --- writing outside the workspace ------------------------------------------------------------


def test_writing_outside_needs_approval_and_nothing_is_written_without_it(box):
    outside = box["outside"]
    (box["ws"] / "up").symlink_to(outside)
    (box["ws"] / "linked.txt").symlink_to(outside / "existing.txt")
    (box["ws"] / "dangling.txt").symlink_to(outside / "created-by-dangling.txt")
    out = run(
        box,
        ("write_file", {"path": "../outside/new.txt", "content": "x"}),
        ("write_file", {"path": "up/through-parent.txt", "content": "x"}),
        ("write_file", {"path": "linked.txt", "content": "overwritten\n"}),
        ("write_file", {"path": "dangling.txt", "content": "x"}),
        ("write_file", {"path": "~/.ssh/authorized_keys", "content": "ssh-ed25519 AAAA evil"}),
        ("write_file", {"path": str(outside / "absolute.txt"), "content": "x"}),
    )
    assert refusal(out[0]) == blocked(
        "write-outside-workspace",
        f"not approved: writes outside the workspace {box['ws']}",
        str(outside / "new.txt"),
    )
    assert "through a symlink" in refusal(out[1])
    assert f"Target: {outside / 'through-parent.txt'}." in refusal(out[1])
    assert f"Target: {outside / 'existing.txt'}." in refusal(out[2])
    assert f"Target: {outside / 'created-by-dangling.txt'}." in refusal(out[3])
    ssh = refusal(out[4])
    assert "(rule write-outside-workspace+write-ssh)" in ssh
    assert "Do not retry" in ssh
    refusal(out[5])
    # canaries: nothing outside changed, nothing was created anywhere
    assert sorted(p.name for p in outside.iterdir()) == ["existing.txt"]
    assert (outside / "existing.txt").read_text() == "original\n"
    assert not (box["home"] / ".ssh/authorized_keys").exists()
    assert sorted(p.name for p in box["ws"].iterdir()) == ["dangling.txt", "linked.txt", "up"]


def test_an_approver_answering_once_lets_each_write_through(box):
    (box["ws"] / "up").symlink_to(box["outside"])
    approver = Approver("once", "once", "once")
    out = run(
        box,
        ("write_file", {"path": "../outside/new.txt", "content": "one\n"}),
        ("write_file", {"path": "up/two.txt", "content": "two\n"}),
        ("write_file", {"path": "~/.ssh/authorized_keys", "content": "ssh-ed25519 AAAA me\n"}),
        approval_callback=approver,
    )
    assert [o.split(" (")[0] for o in out] == ["Wrote 4 bytes", "Wrote 4 bytes", "Wrote 20 bytes"]
    assert (box["outside"] / "new.txt").read_text() == "one\n"
    assert (box["outside"] / "two.txt").read_text() == "two\n"
    assert (box["home"] / ".ssh/authorized_keys").read_text() == "ssh-ed25519 AAAA me\n"
    outside, home = box["outside"], box["home"]
    assert approver.keys == [
        f"file:write-outside-workspace:{outside / 'new.txt'}",
        f"file:write-outside-workspace:{outside / 'two.txt'}",
        f"file:write-outside-workspace+write-ssh:{home / '.ssh/authorized_keys'}",
    ]
    first = approver.requests[0]
    assert first.tool == "write_file"
    assert first.details["path"] == "../outside/new.txt"
    assert first.details["target"] == str(outside / "new.txt")
    assert "rule write-outside-workspace" in first.reason


def test_approving_one_outside_path_for_the_session_does_not_approve_another(box):
    approver = Approver("session")
    out = run(
        box,
        ("write_file", {"path": "../outside/a.txt", "content": "1"}),
        ("write_file", {"path": "../outside/a.txt", "content": "2"}),
        ("write_file", {"path": "../outside/b.txt", "content": "3"}),
        approval_callback=approver,
    )
    assert out[0].startswith("Wrote") and out[1].startswith("Wrote")
    refusal(out[2])
    assert (box["outside"] / "a.txt").read_text() == "2"
    assert not (box["outside"] / "b.txt").exists()
    assert approver.keys == [
        f"file:write-outside-workspace:{box['outside'] / 'a.txt'}",
        f"file:write-outside-workspace:{box['outside'] / 'b.txt'}",
    ]


def test_writing_inside_the_workspace_asks_nobody(box):
    (box["ws"] / "sub").mkdir()
    (box["ws"] / "inner").symlink_to(box["ws"] / "sub")
    approver = Approver()
    out = run(
        box,
        ("write_file", {"path": "a/b.txt", "content": "x"}),
        ("write_file", {"path": "inner/../c.txt", "content": "y"}),
        ("write_file", {"path": str(box["ws"] / "sub/d.txt"), "content": "z"}),
        approval_callback=approver,
    )
    assert all(o.startswith("Wrote") for o in out), out
    assert approver.requests == []
    assert (box["ws"] / "sub/d.txt").read_text() == "z"


def test_the_workspace_is_configurable(box):
    config = {"file": {"workspace": str(box["ws"].parent)}}
    out = run(box, ("write_file", {"path": "../outside/ok.txt", "content": "x"}), config=config)
    assert out[0].startswith("Wrote")
    narrow = {"file": {"workspace": "sub"}}
    denied = run(box, ("write_file", {"path": "top.txt", "content": "x"}), config=narrow)
    assert f"the workspace {box['ws'] / 'sub'}" in refusal(denied[0])
    assert not (box["ws"] / "top.txt").exists()


def test_patch_outside_the_workspace_needs_approval_and_writes_nothing(box):
    (box["ws"] / "inside.txt").write_text("alpha\n")
    (box["ws"] / "linked.txt").symlink_to(box["outside"] / "existing.txt")
    diff = (
        "--- a/inside.txt\n+++ b/inside.txt\n@@ -1 +1 @@\n-alpha\n+ALPHA\n"
        "--- a/linked.txt\n+++ b/linked.txt\n@@ -1 +1 @@\n-original\n+changed\n"
    )
    out = run(
        box,
        ("patch", {"diff": diff}),
        ("patch", {"path": "linked.txt", "old_string": "original", "new_string": "x"}),
        ("patch", {"path": "../outside/existing.txt", "old_string": "orig", "new_string": "x"}),
    )
    for result in out:
        assert "rule write-outside-workspace" in refusal(result)
    assert (box["ws"] / "inside.txt").read_text() == "alpha\n"
    assert (box["outside"] / "existing.txt").read_text() == "original\n"


# --- reading secrets ----------------------------------------------------------------------------


def test_reading_secret_files_needs_approval_also_through_symlinks_and_dotdot(box):
    (box["ws"] / "innocent.txt").symlink_to(box["home"] / ".aws/credentials")
    (box["ws"] / "cfg").symlink_to(box["home"] / ".ssh")
    approver = Approver("deny")
    out = run(
        box,
        ("read_file", {"path": "innocent.txt"}),
        ("read_file", {"path": "cfg/id_rsa"}),
        ("read_file", {"path": "../home/.ssh/id_rsa"}),
        ("read_file", {"path": "~/.aws/credentials"}),
        ("read_file", {"path": str(box["hermes_home"] / ".env")}),
        ("patch", {"path": "cfg/id_rsa", "old_string": "s3cr3t-canary", "new_string": "x"}),
        ("read_file", {"path": "/proc/self/environ"}),
        approval_callback=approver,
    )
    for result in out:
        assert SECRET not in result
        refusal(result)
    home = box["home"]
    assert refusal(out[0]) == blocked(
        "read-credentials", "not approved: a credential file", str(home / ".aws/credentials")
    )
    assert "(rule read-credentials+read-ssh)" in refusal(out[1])  # ~/.ssh, and a key file
    assert "(rule read-credentials+read-ssh)" in refusal(out[2])
    assert "(rule read-hermes-secrets)" in refusal(out[4])
    assert "read-ssh" in refusal(out[5]) and "write-ssh" in refusal(out[5])
    assert "(rule read-process-environment)" in refusal(out[6])
    assert approver.keys[0] == f"file:read-credentials:{home / '.aws/credentials'}"
    assert "canary" in (home / ".ssh/id_rsa").read_text()  # the patch wrote nothing


def test_an_approved_read_of_a_secret_file_is_shown(box):
    (box["ws"] / "innocent.txt").symlink_to(box["home"] / ".aws/credentials")
    out = run(box, ("read_file", {"path": "innocent.txt"}), approval_callback=Approver("once"))
    assert SECRET in out[0]


def test_ordinary_reads_outside_the_workspace_ask_nobody(box):
    approver = Approver()
    out = run(box, ("read_file", {"path": "../outside/existing.txt"}), approval_callback=approver)
    assert out == ["     1\toriginal"]
    assert approver.requests == []


# --- search_files -------------------------------------------------------------------------------


def test_search_finds_latin1_content_and_non_utf8_names(box):
    ws = box["ws"]
    (ws / "latin.txt").write_bytes("Grüße, needle here\n".encode("latin-1"))
    raw = os.fsencode(str(ws)) + b"/caf\xe9.txt"
    with open(raw, "wb") as handle:
        handle.write(b"the needle again\n")
    out = run(
        box,
        ("search_files", {"pattern": "needle"}),
        ("search_files", {"pattern": "caf*", "target": "files"}),
        ("search_files", {"pattern": "needle", "file_glob": "caf*"}),
    )
    lines = out[0].splitlines()
    assert lines[0] == "caf\\xe9.txt:1: the needle again"
    assert lines[1] == "latin.txt:1: Gr\ufffd\ufffde, needle here"
    assert "shown with \\xNN escapes" in out[0]
    assert out[1].splitlines()[0] == "caf\\xe9.txt"
    assert out[2].splitlines()[0] == "caf\\xe9.txt:1: the needle again"
    for result in out:
        result.encode("utf-8")  # valid text: no lone surrogates
        json.dumps(result, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("git", [False, True])
def test_search_does_not_show_secret_files(box, git):
    ws = box["ws"]
    if git:
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "notes.txt").write_text(f"not the {SECRET[:6]} you want\n")
    (ws / "leak.txt").symlink_to(box["home"] / ".ssh/id_rsa")
    (ws / "keys").symlink_to(box["home"] / ".ssh")
    (ws / "fixtures/.aws").mkdir(parents=True)
    (ws / "fixtures/.aws/credentials").write_text(f"{SECRET}\n")
    out = run(
        box,
        ("search_files", {"pattern": SECRET[:6]}),
        ("search_files", {"pattern": SECRET, "path": "keys"}),
        ("search_files", {"pattern": SECRET, "path": "leak.txt"}),
        ("search_files", {"pattern": SECRET, "path": str(box["home"])}),
        # the file guard's own rules; the command sandbox would also hide these folders
        config={"terminal": {"sandbox": "off"}},
    )
    assert out[0].startswith(f"notes.txt:1: not the {SECRET[:6]}")
    for result in out:
        assert SECRET not in result
    assert "not searched: 1 file that may hold secrets: fixtures/.aws/credentials" in out[0]
    assert "(read-ssh)" in out[1] and "(read-ssh)" in out[2]
    assert "not searched: 2 files that may hold secrets" in out[3]


# --- environments other than local: the shell resolver ----------------------------------------


class ShellResolved(LocalEnvironment):
    """The local machine seen as a remote environment: paths are resolved by the shell script
    that runs in docker and ssh sandboxes (``realpath`` hidden when ``plain`` is set, as in
    busybox)."""

    name = "shellish"
    plain = False
    broken = False

    def run(self, command, **kwargs):
        if self.broken and "__hermes_real" in command:
            return CommandResult("sh: realpath: not found\n", 127)
        if self.plain:
            command = "realpath() { return 1; }\n" + command
        return super().run(command, **kwargs)


def shell_plugin(kind):
    class Plugin:
        @hookimpl
        def hermes_register_environments(self, register):
            def factory(config, task_id):
                env = kind(config["terminal"]["cwd"], sandbox=SandboxSettings("off"))
                env.home_cwd = config["terminal"]["cwd"]
                return env

            register("shellish", factory)

    return Plugin()


@pytest.mark.parametrize("plain", [False, True], ids=["realpath", "readlink-loop"])
def test_remote_environments_resolve_where_the_files_are(box, plain):
    kind = type("Env", (ShellResolved,), {"plain": plain})
    (box["ws"] / "up").symlink_to(box["outside"])
    (box["ws"] / "innocent.txt").symlink_to(box["home"] / ".aws/credentials")
    approver = Approver()
    out = run(
        box,
        ("write_file", {"path": "../outside/new.txt", "content": "x"}),
        ("write_file", {"path": "up/through.txt", "content": "x"}),
        ("write_file", {"path": "~/.ssh/authorized_keys", "content": "x"}),
        ("read_file", {"path": "innocent.txt"}),
        ("write_file", {"path": "fine.txt", "content": "ok\n"}),
        plugins=("file", shell_plugin(kind)),
        config={"terminal": {"backend": "shellish"}},
        approval_callback=approver,
    )
    outside, home = box["outside"], box["home"]
    assert approver.keys == [
        f"file:write-outside-workspace:{outside / 'new.txt'}",
        f"file:write-outside-workspace:{outside / 'through.txt'}",
        f"file:write-outside-workspace+write-ssh:{home / '.ssh/authorized_keys'}",
        f"file:read-credentials:{home / '.aws/credentials'}",
    ]
    assert all(SECRET not in o for o in out)
    assert out[4].startswith("Wrote 3 bytes")
    assert sorted(p.name for p in outside.iterdir()) == ["existing.txt"]
    assert not (home / ".ssh/authorized_keys").exists()


def test_a_path_that_cannot_be_resolved_needs_approval(box):
    kind = type("Env", (ShellResolved,), {"broken": True})
    approver = Approver("deny", "deny", "once")
    out = run(
        box,
        ("write_file", {"path": "fine.txt", "content": "x"}),
        ("search_files", {"pattern": "x"}),
        ("read_file", {"path": "fine.txt"}),
        ("write_file", {"path": "fine.txt", "content": "x"}),
        plugins=("file", shell_plugin(kind)),
        config={"terminal": {"backend": "shellish"}},
        approval_callback=approver,
    )
    assert "(rule path-unresolved)" in refusal(out[0])
    assert "(rule path-unresolved)" in refusal(out[1])
    assert "(rule path-unresolved)" in refusal(out[2])
    assert out[3].startswith("Wrote 1 bytes")
    assert approver.keys[0] == "file:path-unresolved:fine.txt"


# --- a real Docker sandbox (busybox: no `realpath -m`, no git) ---------------------------------


def docker_settings():
    """``docker_host`` and ``docker_image`` of the test engine (skipped without one, failed
    under CI)."""
    values = service_variables()
    host = values.get("HERMES_TEST_DOCKER_HOST") or values.get("DOCKER_HOST")
    image = values.get("HERMES_TEST_DOCKER_IMAGE")
    if not host or not image:
        unavailable("no test Docker engine (HERMES_TEST_DOCKER_HOST/IMAGE unset)")
    try:
        import docker

        client = docker.DockerClient(base_url=host, timeout=10)
        client.ping()
        client.images.get(image)
        client.close()
    except Exception as exc:
        unavailable(f"no usable Docker engine at {host}: {type(exc).__name__}")
    return {"backend": "docker", "docker_host": host, "docker_image": image}


def test_in_a_docker_sandbox_paths_are_resolved_inside_the_container(box):
    # the set-up writes the container user's ~/.ssh, outside the writable workdir and /tmp
    terminal = {**docker_settings(), "docker_read_only": False}
    setup = (
        "mkdir -p /root/.ssh && echo s3cr3t-canary-value > /root/.ssh/id_rsa && "
        "ln -s /tmp up && ln -s /root/.ssh keys && printf 'caf\\351 needle\\n' > latin.txt"
    )
    asked = []

    def approve(request):
        asked.append(request)
        return "once" if request.tool == "terminal" else "deny"

    out = run(
        box,
        ("terminal", {"command": setup}),
        ("write_file", {"path": "../escape.txt", "content": "x"}),
        ("write_file", {"path": "up/through.txt", "content": "x"}),
        ("write_file", {"path": "~/.ssh/authorized_keys", "content": "x"}),
        ("read_file", {"path": "keys/id_rsa"}),
        ("search_files", {"pattern": "needle|s3cr3t"}),
        ("read_file", {"path": "/escape.txt"}),
        ("read_file", {"path": "/tmp/through.txt"}),
        ("terminal", {"command": "ls -A /root/.ssh"}),
        ("write_file", {"path": "fine.txt", "content": "ok\n"}),
        plugins=("file", "terminal", "docker"),
        config={"terminal": terminal},
        approval_callback=approve,
    )
    assert "[exit code: 0;" in out[0]
    assert "Target: /escape.txt." in refusal(out[1])
    assert "Target: /tmp/through.txt." in refusal(out[2])
    assert "write-ssh" in refusal(out[3])
    assert "read-ssh" in refusal(out[4])
    assert out[5] == "latin.txt:1: caf\ufffd needle"
    assert [o.removeprefix("Error: ") for o in out[6:8]] == [
        "file not found: /escape.txt",
        "file not found: /tmp/through.txt",
    ]
    assert out[8].splitlines()[0] == "id_rsa"  # no authorized_keys
    assert out[9] == "Wrote 3 bytes (1 lines) to fine.txt."
    assert [r.key for r in asked if r.tool != "terminal"] == [
        "file:write-outside-workspace:/escape.txt",
        "file:write-outside-workspace:/tmp/through.txt",
        "file:write-outside-workspace+write-ssh:/root/.ssh/authorized_keys",
        "file:read-credentials+read-ssh:/root/.ssh/id_rsa",
    ]
    assert all(SECRET not in o for o in out)


# --- the rules themselves ---------------------------------------------------------------------

SECRET_FILES = [
    ("/etc/shadow", "read-system-secrets"),
    ("/etc/gshadow", "read-system-secrets"),
    ("/etc/ssh/ssh_host_ed25519_key", "read-system-secrets"),
    ("/home/u/.ssh/id_ed25519", "read-ssh"),
    ("/home/u/.ssh/authorized_keys", "read-ssh"),
    ("/root/.ssh/config", "read-ssh"),
    ("/home/u/.aws/credentials", "read-credentials"),
    ("/home/u/.config/gcloud/application_default_credentials.json", "read-credentials"),
    ("/home/u/.azure/accessTokens.json", "read-credentials"),
    ("/home/u/.kube/config", "read-credentials"),
    ("/home/u/.docker/config.json", "read-credentials"),
    ("/home/u/.netrc", "read-credentials"),
    ("/home/u/.pgpass", "read-credentials"),
    ("/home/u/.git-credentials", "read-credentials"),
    ("/srv/backup/id_rsa", "read-credentials"),
    ("/home/u/.hermes/.env", "read-hermes-secrets"),
    ("/home/u/.hermes/profiles/work/.env", "read-hermes-secrets"),
    ("/opt/hermes-home/.env", "read-hermes-secrets"),
    ("/home/u/.hermes/sessions.db", "read-hermes-secrets"),
    ("/home/u/.hermes/sessions.db-wal", "read-hermes-secrets"),
    ("/opt/hermes-home/sessions.db", "read-hermes-secrets"),
    ("/opt/hermes-home/profiles/work/auth.json", "read-hermes-secrets"),
    ("/proc/1/environ", "read-process-environment"),
]
PLAIN_FILES = [
    "/etc/hosts",
    "/etc/passwd",
    "/etc/ssh/ssh_host_ed25519_key.pub",
    "/home/u/.bashrc",
    "/home/u/project/README.md",
    "/home/u/project/.env.example",
    "/home/u/.dockerignore",
    "/home/u/.docker/features.json",
    "/home/u/.hermes/config.yaml",
    "/home/u/notes/id_rsa.txt",
    "/proc/1/status",
]


@pytest.mark.parametrize(("path", "rule"), SECRET_FILES)
def test_secret_files_are_recognised(path, rule):
    from hermes_toolset_file.sensitive import read_concerns

    found = read_concerns([path], home="/home/u", hermes_homes=["/opt/hermes-home"])
    assert rule in [c.rule for c in found]


@pytest.mark.parametrize("path", PLAIN_FILES)
def test_ordinary_files_are_not_secret(path):
    from hermes_toolset_file.sensitive import read_concerns

    assert read_concerns([path], home="/home/u", hermes_homes=["/opt/hermes-home"]) == []


def ssh_settings(scratch):
    """``terminal`` settings of the test SSH server, starting in ``scratch``, or skip."""
    import socket

    values = service_variables()
    names = ("HOST", "PORT", "USER", "KEY", "KNOWN_HOSTS")
    found = {n: values.get(f"HERMES_TEST_SSH_{n}") for n in names}
    if not all(found.values()):
        unavailable("no test SSH server (HERMES_TEST_SSH_* unset)")
    try:
        socket.create_connection((found["HOST"], int(found["PORT"])), timeout=3).close()
    except OSError as exc:
        unavailable(f"no SSH server at {found['HOST']}:{found['PORT']}: {exc}")
    return {
        "backend": "ssh",
        "ssh_host": found["HOST"],
        "ssh_port": int(found["PORT"]),
        "ssh_user": found["USER"],
        "ssh_key": found["KEY"],
        "ssh_known_hosts": found["KNOWN_HOSTS"],
        "ssh_cwd": scratch,
    }


def test_over_ssh_paths_are_resolved_on_the_remote_host(box):
    scratch = f"/tmp/hermes-file-guard-{os.getpid()}-{id(box)}"
    terminal = ssh_settings(scratch)
    asked = []

    def approve(request):
        asked.append(request)
        return "once" if request.tool == "terminal" else "deny"

    out = run(
        box,
        ("terminal", {"command": "ln -s .. up && printf 'na\\357ve needle\\n' > latin.txt"}),
        ("write_file", {"path": "../escape.txt", "content": "x"}),
        ("write_file", {"path": "up/through.txt", "content": "x"}),
        ("read_file", {"path": "~/.ssh/authorized_keys"}),
        ("search_files", {"pattern": "needle"}),
        ("terminal", {"command": "ls -A /tmp | grep -c -e '^escape.txt$' -e '^through.txt$'"}),
        ("write_file", {"path": "fine.txt", "content": "ok\n"}),
        ("terminal", {"command": f"cd / && rm -rf {scratch}"}),
        plugins=("file", "terminal", "ssh"),
        config={"terminal": terminal},
        approval_callback=approve,
    )
    assert "[exit code: 0;" in out[0], out[0]
    assert "Target: /tmp/escape.txt." in refusal(out[1])
    assert "through a symlink" in refusal(out[2])
    assert "read-ssh" in refusal(out[3])
    assert out[4] == "latin.txt:1: na\ufffdve needle"
    assert out[5].splitlines()[0] == "0"
    assert out[6] == "Wrote 3 bytes (1 lines) to fine.txt."
    assert [r.key.split(":")[1] for r in asked if r.tool != "terminal"] == [
        "write-outside-workspace",
        "write-outside-workspace",
        "read-ssh",
    ]
