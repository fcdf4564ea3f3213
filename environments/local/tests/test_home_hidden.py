"""The home folder hidden in the sandbox, through the real local environment, the terminal tool
and bubblewrap: with a home folder outside ``/tmp`` (as every real user's is) holding secrets no
list names, no sandboxed command reads one, while ordinary work (a Python venv in the workspace,
git with the user's name, cargo, node) still works."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hermes_env_local import LocalEnvironment, check_config
from hermes_env_sandbox import SandboxSettings, SandboxUnavailable, unavailable_reason
from hermes_env_sandbox.settings import HomeAllow

from hermes_core.testing import make_agent, text, tool_call
from hermes_hookspecs.refusals import is_blocked

pytestmark = pytest.mark.skipif(
    unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}"
)

REAL_HOME = Path(os.path.expanduser("~")).resolve()
"""The home folder of the user running the tests (its toolchains are linked into the test's)."""

TAG = f"canary-{secrets.token_hex(6)}"
"""In every secret of the test's home folder: found in no output."""

SECRETS = {
    ".bash_history": "shell history",
    ".zsh_history": "shell history",
    ".config/chromium/Default/Cookies": "a Chromium cookie store",
    ".mozilla/firefox/k3x9.default-release/logins.json": "Firefox's saved logins",
    ".local/share/keyrings/login.keyring": "a GNOME key ring",
    ".password-store/work/mail.gpg": "a pass store",
    ".config/rclone/rclone.conf": "rclone",
    ".m2/settings.xml": "Maven settings",
    ".gradle/gradle.properties": "Gradle settings",
    ".config/git/credentials": "git's credential store",
    ".newtool/token": "a token file of a tool no list names",
}

GITCONFIG = f"""[user]
\tname = Ada Tester
\temail = ada@example.test
[init]
\tdefaultBranch = main
[credential]
\thelper = "!f() {{ echo password={TAG}-helper; }}; f"
[http]
\textraHeader = Authorization: Bearer {TAG}-header
[url "https://ada:{TAG}-url@git.example.test/"]
\tinsteadOf = https://git.example.test/
"""


def _outside_tmp() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="hermes-test-home-", dir="/var/tmp"))
    if str(folder.resolve()).startswith("/tmp/"):
        shutil.rmtree(folder)
        pytest.skip("/var/tmp is /tmp here: no folder outside /tmp to make a home in")
    return folder


@pytest.fixture
def user_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's home folder outside /tmp, with the secrets above, ``~/.ssh``, hermes's home,
    a git configuration naming the user (and three secrets), the toolchains of the user running
    the tests linked in (``~/.cargo/bin``, ``~/.rustup``, ``~/.pyenv`` where they exist) and a
    project: the workspace. ``HOME``, ``HERMES_HOME`` and ``PATH`` point there."""
    root = _outside_tmp()
    home = root / "home"
    for relative in SECRETS:
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{TAG} {relative}\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text(f"{TAG} ssh key\n")
    (home / ".hermes").mkdir()
    (home / ".hermes" / ".env").write_text(f"OPENAI_API_KEY={TAG}-hermes\n")
    (home / ".gitconfig").write_text(GITCONFIG)
    (home / "project").mkdir()
    for relative in (".cargo/bin", ".rustup", ".pyenv"):
        if (REAL_HOME / relative).is_dir() and REAL_HOME != Path("/"):
            (home / relative).parent.mkdir(parents=True, exist_ok=True)
            (home / relative).symlink_to(REAL_HOME / relative)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(home / ".hermes"))
    monkeypatch.setenv("PATH", f"{home}/.cargo/bin:/usr/local/bin:/usr/bin:/bin")
    yield home
    subprocess.run(["chmod", "-R", "u+w", str(root)], check=False)
    shutil.rmtree(root, ignore_errors=True)


def environment(home: Path, **settings: object) -> LocalEnvironment:
    """The local environment over ``~/project``, in the sandbox of ``settings``."""
    return LocalEnvironment(
        str(home / "project"),
        sandbox=SandboxSettings(**settings),  # type: ignore[arg-type]
        hermes_home=str(home / ".hermes"),
    )


def run(env: LocalEnvironment, command: str, timeout: float = 120) -> str:
    """The output of ``command`` (which must succeed)."""
    result = env.run(command, timeout=timeout)
    assert result.exit_code == 0, result.output
    return result.output


def terminal(home: Path, *commands: str, config: dict[str, object] | None = None) -> list[str]:
    """Run ``commands`` as terminal calls of one turn (yolo: the sandbox is the only wall)."""
    cfg = {"terminal": {"cwd": str(home / "project"), **(config or {})}}
    agent = make_agent(
        *[tool_call("terminal", {"command": c}) for c in commands],
        text("done"),
        plugins=["terminal", "local"],
        config=cfg,
        yolo=True,
    )
    try:
        agent.chat("go")
        return [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()


# --- nothing leaks --------------------------------------------------------------------------


def test_no_secret_of_the_home_folder_is_readable_through_the_terminal_tool(user_home):
    paths = " ".join(f"~/{relative}" for relative in SECRETS)
    out = terminal(
        user_home,
        f"cat {paths} ~/.ssh/id_ed25519 ~/.hermes/.env 2>&1; echo read-done",
        "grep -rsI canary ~ --exclude-dir=.rustup --exclude-dir=.pyenv; echo searched",
        "find ~ -path ~/.rustup -prune -o -path ~/.pyenv -prune -o -print; echo found",
        "ls -laR ~/.config ~/.local ~/.mozilla ~/.newtool ~/.m2 ~/.gradle 2>&1; echo listed",
    )
    joined = "\n".join(out)
    assert TAG not in joined
    assert "read-done" in out[0] and "searched" in out[1] and "found" in out[2]
    assert "listed" in out[3]
    for relative in SECRETS:  # not even the names show
        assert f"{user_home}/{relative}" not in out[2]


def test_no_secret_is_readable_by_a_python_program(user_home):
    probe = user_home / "project" / "probe.py"
    targets = [str(user_home / r) for r in SECRETS] + [str(user_home / ".gitconfig")]
    probe.write_text(
        "import os, sys\n"
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        with open(path) as handle:\n"
        "            print(path, handle.read())\n"
        "    except OSError as exc:\n"
        "        print(path, type(exc).__name__)\n"
        "for folder, dirs, files in os.walk(os.path.expanduser('~')):\n"
        "    dirs[:] = [d for d in dirs if d not in ('.rustup', '.pyenv')]\n"
        "    for name in files:\n"
        "        try:\n"
        "            with open(os.path.join(folder, name), errors='replace') as handle:\n"
        "                print(handle.read(100000))\n"
        "        except OSError:\n"
        "            pass\n"
        "print('probed')\n"
    )
    env = environment(user_home)
    try:
        out = run(env, f"{sys.executable} probe.py")
    finally:
        env.cleanup()
    assert "probed" in out and TAG not in out
    assert "Ada Tester" in out  # the git configuration shows, without its secrets


def test_the_git_configuration_keeps_the_user_and_drops_the_credentials(user_home):
    env = environment(user_home)
    try:
        shown = run(env, "cat ~/.gitconfig; git config --global --list")
        helper = env.run("git config --global credential.helper").exit_code
    finally:
        env.cleanup()
    assert "user.name=Ada Tester" in shown and "user.email=ada@example.test" in shown
    assert "init.defaultbranch=main" in shown
    assert TAG not in shown and "credential" not in shown and "extraheader" not in shown
    assert helper == 1  # no credential helper at all


def test_a_link_in_an_allowed_folder_to_a_secret_leads_nowhere(user_home):
    (user_home / ".local" / "bin").mkdir(parents=True)
    (user_home / ".local" / "bin" / "innocent").symlink_to(user_home / ".newtool" / "token")
    (user_home / "project" / "keys").symlink_to(user_home / ".password-store")
    env = environment(user_home)
    try:
        out = env.run("ls ~/.local/bin; cat ~/.local/bin/innocent keys/work/mail.gpg 2>&1").output
    finally:
        env.cleanup()
    assert "innocent" in out  # the folder shows
    assert TAG not in out and "No such file or directory" in out


def test_the_model_is_told_the_home_folder_is_hidden(user_home):
    [out] = terminal(user_home, "cat ~/.newtool/token")
    assert "[sandbox:" in out and "home folder" in out and "home_allow" in out
    assert TAG not in out


# --- ordinary work still works ----------------------------------------------------------------

_TINY_BACKEND = """
import base64, hashlib, os, zipfile

def build_wheel(directory, config_settings=None, metadata_directory=None):
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
"""


def _python(home: Path) -> str:
    """A Python interpreter as the user has it: from ``~/.pyenv`` (through the allow-list)
    when this test's own Python comes from there, else this test's base interpreter."""
    base = Path(sys.base_prefix).resolve()
    pyenv = (REAL_HOME / ".pyenv").resolve()
    if (home / ".pyenv").is_symlink() and base.is_relative_to(pyenv):
        return str(home / ".pyenv" / base.relative_to(pyenv) / "bin" / "python3")
    return str(base / "bin" / "python3")


def test_a_python_project_makes_a_venv_in_the_workspace_and_installs_into_it(user_home):
    project = user_home / "project"
    (project / "pkg").mkdir()
    (project / "pkg" / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "tiny"\nversion = "1.0"\n'
    )
    (project / "pkg" / "backend.py").write_text(_TINY_BACKEND)
    (project / "main.py").write_text("import sys, tiny\nprint(tiny.OK, sys.prefix)\n")
    env = environment(user_home)
    try:
        run(env, f"{_python(user_home)} -m venv --without-pip .venv")
        run(
            env,
            f"{sys.executable} -m pip --python .venv/bin/python install -q --no-index "
            "--no-build-isolation ./pkg",
        )
        out = run(env, ".venv/bin/python main.py")
    finally:
        env.cleanup()
    assert out.startswith("tiny-ok") and str(project / ".venv") in out


def test_git_commits_in_the_workspace_carry_the_users_name(user_home):
    (user_home / "project" / "README").write_text("hello\n")
    env = environment(user_home)
    try:
        out = run(
            env,
            "git init -q . && git add -A && git commit -qm first && git log -1 --format='%an <%ae>'"
            " && git branch --show-current",
        )
    finally:
        env.cleanup()
    assert "Ada Tester <ada@example.test>" in out
    assert out.strip().endswith("main")


def test_a_rust_project_builds_with_cargo_from_the_home_folder(user_home):
    if not (user_home / ".cargo" / "bin" / "cargo").exists():
        pytest.skip(f"no cargo in {REAL_HOME}/.cargo/bin on this machine")
    if not (user_home / ".rustup").exists():
        pytest.skip(f"no {REAL_HOME}/.rustup on this machine")
    env = environment(user_home)
    try:
        out = run(
            env,
            "cargo new -q --vcs none hello && cd hello && cargo build -q --offline 2>&1 && "
            "./target/debug/hello",
            timeout=600,
        )
    finally:
        env.cleanup()
    assert "Hello, world!" in out
    assert (user_home / "project" / "hello" / "target" / "debug" / "hello").exists()


def test_a_node_script_runs(user_home):
    node = shutil.which("node", path=os.defpath + ":/usr/local/bin")
    if node is None:
        pytest.skip("no node on this machine (outside the home folder)")
    (user_home / "project" / "hello.js").write_text(
        "const fs = require('fs');\n"
        "fs.writeFileSync('out.txt', 'written by node');\n"
        "console.log('node says', 6 * 7);\n"
    )
    env = environment(user_home)
    try:
        out = run(env, f"{node} hello.js")
    finally:
        env.cleanup()
    assert "node says 42" in out
    assert (user_home / "project" / "out.txt").read_text() == "written by node"


# --- terminal.sandbox.home_allow --------------------------------------------------------------


def test_home_allow_shows_an_extra_path_read_only_or_writable(user_home):
    (user_home / ".mytool").mkdir()
    (user_home / ".mytool" / "settings.ini").write_text("colour = blue\n")
    (user_home / ".cache" / "mytool").mkdir(parents=True)
    env = environment(
        user_home,
        home_allow=(HomeAllow("~/.mytool"), HomeAllow("~/.cache/mytool", writable=True)),
    )
    try:
        out = run(env, "cat ~/.mytool/settings.ini")
        refused = env.run("echo x > ~/.mytool/settings.ini").output
        wrote = run(env, "echo cached > ~/.cache/mytool/item && cat ~/.cache/mytool/item")
        other = env.run("ls ~/.cache; cat ~/.newtool/token 2>&1").output
    finally:
        env.cleanup()
    assert out == "colour = blue\n"
    assert "Read-only file system" in refused
    assert (user_home / ".mytool" / "settings.ini").read_text() == "colour = blue\n"
    assert wrote == "cached\n" and (user_home / ".cache" / "mytool" / "item").exists()
    assert "mytool" in other and TAG not in other


@pytest.mark.parametrize(
    "allowed, fragment",
    [
        ("~/.m2", "holds ~/.m2/settings.xml"),
        ("~/.config", "holds ~/.config/"),
        ("~/.ssh/keys", "lies in ~/.ssh"),
        ("~/.hermes", "is ~/.hermes, which stays hidden"),
        ("/etc", "is not a path inside the home folder"),
    ],
)
def test_home_allow_of_a_path_holding_credentials_is_refused_at_start(user_home, allowed, fragment):
    (user_home / ".ssh" / "keys").mkdir()
    with pytest.raises(SandboxUnavailable) as refused:
        environment(user_home, home_allow=(HomeAllow(allowed),))
    message = str(refused.value)
    assert message.startswith(f"terminal.sandbox.home_allow: {allowed} ")
    assert fragment in message and "\n" not in message
    config = {"terminal": {"sandbox": {"home_allow": [allowed]}}}
    assert any(message == problem for problem in check_config(config))  # hermes doctor


def test_home_allow_refusal_reaches_the_model_as_one_blocked_line(user_home):
    [out] = terminal(
        user_home, "cat ~/.m2/settings.xml", config={"sandbox": {"home_allow": "~/.m2"}}
    )
    assert is_blocked(out) and "home_allow" in out and "\n" not in out
    assert TAG not in out


def test_a_link_swapped_under_an_allowed_path_shows_nothing_more(user_home):
    """``~/.tool`` leads through the workspace (which commands may change) to a folder of tools;
    once that is swapped for a link to a secret folder, ``~/.tool`` is no longer shown."""
    tools = user_home / "project" / "tools"
    tools.mkdir()
    (tools / "readme").write_text("the tools\n")
    (user_home / ".tool").symlink_to(tools)
    env = environment(user_home, home_allow=(HomeAllow("~/.tool"),))
    try:
        before = run(env, "cat ~/.tool/readme")
        shutil.rmtree(tools)  # the swap, as a command in the workspace could make it
        tools.symlink_to(user_home / ".newtool")
        after = env.run("ls -la ~/.tool/ 2>&1; cat ~/.tool/token tools/token 2>&1").output
    finally:
        env.cleanup()
    assert before == "the tools\n"
    assert TAG not in after


# --- the workspace -----------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["home", "root"])
def test_a_workspace_that_is_the_home_folder_or_the_root_is_refused(user_home, where):
    folder = str(user_home) if where == "home" else "/"
    with pytest.raises(SandboxUnavailable) as refused:
        LocalEnvironment(folder, hermes_home=str(user_home / ".hermes"))
    assert "choose a narrower folder" in str(refused.value)
    assert "terminal.cwd" in str(refused.value) and "\n" not in str(refused.value)
    [out] = terminal(user_home, "cat ~/.newtool/token", config={"cwd": folder})
    assert is_blocked(out) and "choose a narrower folder" in out and TAG not in out
    assert any("narrower folder" in p for p in check_config({"terminal": {"cwd": folder}}))


def test_a_workspace_holding_the_home_folder_keeps_credentials_hidden(user_home):
    """The workspace is the folder holding the home folder: the home folder is part of the
    workspace, and its credential folders and hermes's home stay hidden as before."""
    parent = user_home.parent
    (user_home / ".bashrc").write_text("# mine\n")
    env = LocalEnvironment(str(parent), hermes_home=str(user_home / ".hermes"))
    try:
        out = env.run(
            "cat home/.ssh/id_ed25519 home/.hermes/.env home/.m2/settings.xml "
            "home/.config/git/credentials home/.password-store/work/mail.gpg "
            "home/.config/rclone/rclone.conf home/.local/share/keyrings/login.keyring 2>&1; "
            "echo x >> home/.bashrc; echo rc=$?; echo y > home/notes && echo wrote"
        ).output
    finally:
        env.cleanup()
    assert TAG not in out
    assert "rc=1" in out and "wrote" in out
    assert (user_home / ".bashrc").read_text() == "# mine\n"


def test_with_the_sandbox_off_nothing_changes(user_home):
    env = LocalEnvironment(
        str(user_home), sandbox=SandboxSettings("off"), hermes_home=str(user_home / ".hermes")
    )
    try:
        out = run(env, "cat ~/.newtool/token; cat ~/.gitconfig")
    finally:
        env.cleanup()
    assert f"{TAG} .newtool/token" in out and f"{TAG}-helper" in out


def test_the_read_only_profile_shows_a_workspace_in_the_home_folder(user_home):
    (user_home / "project" / "notes.txt").write_text("project notes\n")
    env = environment(user_home, profile="read-only")
    try:
        out = env.run("cat notes.txt; touch new 2>&1; cat ~/.newtool/token 2>&1").output
    finally:
        env.cleanup()
    assert "project notes" in out and "Read-only file system" in out
    assert TAG not in out
    assert not (user_home / "project" / "new").exists()
