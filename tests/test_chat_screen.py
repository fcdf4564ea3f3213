"""The interactive chat as a person sees it: ``hermes`` runs in tmux and the tests read the screen
with ``capture-pane`` (tool calls with their command and output preview, rendered markdown, the
approval prompt, Ctrl-C)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

if shutil.which("tmux") is None:
    if os.environ.get("CI"):
        raise RuntimeError("tmux is missing: .ci/services.sh installs it (apt-get install tmux)")
    pytest.skip("tmux is not installed (apt-get install tmux)", allow_module_level=True)

PROVIDER = textwrap.dedent(
    '''
    """The screen tests' provider: plays $SCRIPT_FILE; a step {"echo": true} answers with the
    last user message the model was sent, so the screen shows what the model saw."""
    import json
    import os
    import time
    from pathlib import Path

    from hermes_hookspecs import ApprovalRequest, Provider, Tool, Toolset, hookimpl


    def _steps():
        from hermes_core.testing import Call, Turn

        for step in json.load(open(os.environ["SCRIPT_FILE"])):
            if step.get("echo"):
                yield lambda request: Turn(
                    text="model saw: " + json.dumps(request.messages[-1]["content"]))
                continue
            calls = [Call(c["name"], c.get("arguments", {})) for c in step.get("calls", [])]
            yield Turn(text=step.get("text"), calls=calls, delay=step.get("delay", 0.0))


    @hookimpl
    def hermes_register_providers(register):
        from hermes_core.testing import ScriptedModel

        model = ScriptedModel(*_steps())
        register(Provider(name="scripted", api_mode="chat_completions",
                          create_client=lambda settings: model, default_model="script"))


    def _wipe(args, ctx):
        Path(os.environ["WIPE_MARK"]).write_text("wiped")
        return "wiped"


    @hookimpl
    def hermes_register_toolsets(register):
        register(Toolset(name="scratch", tools=[Tool(
            name="wipe", description="Wipe the scratch folder",
            parameters={"type": "object", "properties": {}}, handler=_wipe,
            needs_approval=lambda args: ApprovalRequest(action="wipe scratch",
                                                        reason="wipes the scratch folder"))]))
    '''
)


class Screen:
    """``hermes`` in a tmux session of its own (a private server socket): type, read the
    screen."""

    count = 0

    def __init__(self, tmp_path: Path, argv: list[str], env: dict[str, str]) -> None:
        Screen.count += 1
        self.socket = str(tmp_path / f"tmux{Screen.count}.sock")
        launcher = tmp_path / "launch.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        launcher.write_text(f"{exports}cd {shlex.quote(str(tmp_path))}\nexec {shlex.join(argv)}\n")
        self.tmux("new-session", "-d", "-s", "chat", "-x", "110", "-y", "50", f"bash {launcher}")
        self.tmux("set-option", "-t", "chat", "remain-on-exit", "on")

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=20
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def text(self) -> str:
        """Everything the pane shows, scrollback included, wrapped lines joined."""
        shown = self.tmux("capture-pane", "-p", "-J", "-S", "-1000", "-t", "chat")
        return "\n".join(line.rstrip() for line in shown.splitlines())

    def wait_for(self, needle: str, timeout: float = 20.0, after: int = 0) -> str:
        """Wait until ``needle`` appears (``after`` occurrences already seen); return the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.text()
            if screen.count(needle) > after:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"did not see {needle!r}; the screen:\n{screen}")
            time.sleep(0.1)

    def wait_for_prompt(self, number: int, timeout: float = 20.0) -> str:
        """Wait until the screen shows ``number`` input prompts; return the screen."""
        deadline = time.monotonic() + timeout
        while prompts(screen := self.text()) < number:
            if time.monotonic() > deadline:
                raise AssertionError(f"did not see prompt {number}; the screen:\n{screen}")
            time.sleep(0.1)
        return screen

    def wait_for_exit(self, timeout: float = 15.0) -> None:
        """Wait until the program in the pane has exited (a zombie tmux has not reaped yet
        counts: a loaded tmux server can be slow to notice)."""
        pid = self.tmux("list-panes", "-t", "chat", "-F", "#{pane_pid}").split()[0]
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(f"/proc/{pid}/stat") as handle:
                    state = handle.read().rsplit(")", 1)[-1].split()[0]
            except FileNotFoundError:
                return
            if state in ("Z", "X"):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"hermes did not exit; the screen:\n{self.text()}")
            time.sleep(0.1)

    def type(self, line: str) -> None:
        self.tmux("send-keys", "-t", "chat", "-l", line)
        self.tmux("send-keys", "-t", "chat", "Enter")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "chat", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)


def prompts(screen: str) -> int:
    """How many input prompts the screen shows."""
    return sum(1 for line in screen.splitlines() if line.startswith("> ") or line == ">")


@pytest.fixture
def chat(tmp_path: Path):
    """Start ``hermes`` with a script (a list of steps) and extra arguments; closed after."""
    screens: list[Screen] = []

    def start(script: list[dict], *args: str, plugins: str = "screen_scripted") -> Screen:
        site = tmp_path / "site"
        if not site.exists():
            site.mkdir()
            (site / "screen_scripted.py").write_text(PROVIDER)
            info = site / "screen_scripted-0.1.dist-info"
            info.mkdir()
            (info / "METADATA").write_text("Metadata-Version: 2.1\nName: screen-scripted\n")
            (info / "entry_points.txt").write_text("[hermes]\nscreen_scripted = screen_scripted\n")
        (tmp_path / "script.json").write_text(json.dumps(script))
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", str(tmp_path)),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "HERMES_HOME": str(home),
            "HERMES_PLUGINS": plugins,
            "SCRIPT_FILE": str(tmp_path / "script.json"),
            "WIPE_MARK": str(tmp_path / "wiped"),
            "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        }
        hermes = str(Path(sys.executable).with_name("hermes"))
        screen = Screen(tmp_path, [hermes, *args], env)
        screens.append(screen)
        screen.wait_for("/help for commands")
        return screen

    yield start
    for screen in screens:
        screen.close()


COUNT = {"command": "seq 1 10"}
TERMINAL_PLUGINS = "screen_scripted,terminal,approvals,local"

MARKDOWN = (
    "# Findings\n\nThe file has **three** problems:\n\n- one\n- two\n\n"
    "```python\nprint('hi')\n```\n"
)


def test_a_tool_call_shows_its_command_and_output_and_the_text_before_it_stays(chat) -> None:
    screen = chat(
        [
            {"text": "Let me count.", "calls": [{"name": "terminal", "arguments": COUNT}]},
            {"text": "Counted."},
        ],
        "chat", "-t", "terminal",
        plugins=TERMINAL_PLUGINS,
    )  # fmt: skip
    screen.type("count to ten")
    shown = screen.wait_for("Counted.")
    lines = shown.splitlines()
    assert "Let me count." in lines  # the text streamed before the call is kept
    [call] = [line for line in lines if "terminal: seq 1 10" in line]
    assert call.startswith("  [+] terminal: seq 1 10 (")
    after = lines[lines.index(call) + 1 :]
    assert [line.strip() for line in after[:4]] == ["1", "2", "3", "4"]
    assert after[4].strip().startswith("… ") and after[4].strip().endswith("more lines")
    assert "5" not in [line.strip() for line in after[:6]]


def test_a_refused_command_says_it_was_refused_and_why(chat) -> None:
    screen = chat(
        [{"calls": [{"name": "terminal", "arguments": {"command": "rm -rf ~"}}]}, {"text": "OK."}],
        "chat", "-t", "terminal",
        plugins=TERMINAL_PLUGINS,
    )  # fmt: skip
    screen.type("clean my home")
    shown = screen.wait_for("OK.")
    lines = shown.splitlines()
    [call] = [line for line in lines if "terminal: rm -rf ~" in line]
    assert call.strip().endswith("refused")
    reason = lines[lines.index(call) + 1]
    assert "recursive delete" in reason


def test_markdown_is_rendered_on_a_terminal_and_plain_with_plain(chat, tmp_path: Path) -> None:
    screen = chat([{"text": MARKDOWN}])
    screen.type("report")
    shown = screen.wait_for("print('hi')")
    assert "Findings" in shown and "# Findings" not in shown
    assert "three problems" in shown and "**" not in shown
    assert "• one" in shown and "```" not in shown
    screen.close()

    plain = chat([{"text": MARKDOWN}], "chat", "--plain")
    plain.type("report")
    shown = plain.wait_for("```", after=0)
    assert "# Findings" in shown and "**three**" in shown and "- one" in shown


def test_help_lists_the_commands_in_aligned_columns(chat) -> None:
    screen = chat([])
    screen.type("/help")
    shown = screen.wait_for("/exit")
    rows = [line for line in shown.splitlines() if line.startswith("  /")]
    assert len(rows) >= 8
    columns = {re.match(r"^  \S.*?\s{2,}(?=\S)", row).end() for row in rows}  # type: ignore[union-attr]
    assert len(columns) == 1, rows


def test_approval_prompt_asks_again_for_an_unknown_answer(chat, tmp_path: Path) -> None:
    screen = chat([{"calls": [{"name": "wipe"}]}, {"text": "All clean."}], "chat", "-t", "scratch")
    screen.type("clean up")
    screen.wait_for("[d]eny:")
    screen.type("maybe")
    screen.wait_for("please answer with one of")
    assert not (tmp_path / "wiped").exists()
    screen.type("o")
    screen.wait_for("All clean.")
    assert (tmp_path / "wiped").exists()


def test_ctrl_c_at_the_approval_prompt_denies_and_interrupts_at_once(chat, tmp_path: Path) -> None:
    screen = chat(
        [{"calls": [{"name": "wipe"}]}, {"echo": True}],
        "chat", "-t", "scratch",
    )  # fmt: skip
    screen.type("clean up")
    screen.wait_for("[d]eny:")
    started = time.monotonic()
    screen.keys("C-c")
    shown = screen.wait_for("(interrupted)", timeout=5)
    assert time.monotonic() - started < 3
    screen.wait_for_prompt(2, timeout=3)
    assert not (tmp_path / "wiped").exists()
    screen.type("hello after the interrupt")
    shown = screen.wait_for("model saw:")
    assert 'model saw: "hello after the interrupt"' in shown, shown


def test_ctrl_c_during_an_answer_keeps_the_next_message_apart(chat) -> None:
    screen = chat([{"text": "a long story", "delay": 30}, {"echo": True}])
    screen.type("tell me a story")
    time.sleep(1)
    screen.keys("C-c")
    screen.wait_for("(interrupted)", timeout=5)
    screen.type("hello after interrupt")
    shown = screen.wait_for("model saw:")
    assert 'model saw: "hello after interrupt"' in shown, shown


def test_resume_shows_the_last_exchanges(chat, tmp_path: Path) -> None:
    screen = chat([{"text": "Paris is the capital."}, {"text": "Berlin."}])
    screen.type("capital of France?")
    screen.wait_for("Paris is the capital.")
    screen.wait_for_prompt(2)
    screen.keys("C-d")
    screen.wait_for_exit()
    screen.close()
    again = chat([{"text": "Rome."}], "chat", "--continue")
    shown = again.wait_for("hermes: Paris is the capital.")
    assert "you: capital of France?" in shown
