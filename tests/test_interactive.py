"""The interactive chat, driven through a real pseudo-terminal as a person would use it."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

PROVIDER_MODULE = textwrap.dedent(
    '''
    """A provider plugin for the interactive test: plays the script in $SCRIPT_FILE."""
    import json
    import os

    from hermes_hookspecs import Provider, Tool, Toolset, hookimpl


    @hookimpl
    def hermes_register_providers(register):
        from hermes_core.testing import Call, ScriptedModel, Turn

        steps = []
        for step in json.load(open(os.environ["SCRIPT_FILE"])):
            calls = [Call(c["name"], c.get("arguments", {})) for c in step.get("calls", [])]
            steps.append(Turn(text=step.get("text"), calls=calls))
        model = ScriptedModel(*steps)
        register(Provider(name="scripted", api_mode="chat_completions",
                          create_client=lambda settings: model, default_model="script"))


    def _slow_wipe(args, ctx):
        import time

        time.sleep(0.5)
        return "wiped"


    @hookimpl
    def hermes_register_toolsets(register):
        from hermes_hookspecs import ApprovalRequest

        register(Toolset(name="dice", tools=[Tool(
            name="roll", description="Roll a die", parameters={"type": "object", "properties": {}},
            handler=lambda args, ctx: "4"), Tool(
            name="wipe", description="Wipe the scratch folder",
            parameters={"type": "object", "properties": {}}, handler=_slow_wipe,
            needs_approval=lambda args: ApprovalRequest(action="wipe scratch", reason="wipes"))]))
    '''
)


def install_provider(site: Path, name: str = "tty_scripted", source: str = PROVIDER_MODULE) -> None:
    (site / f"{name}.py").write_text(source)
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    dist = name.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[hermes]\n{name} = {name}\n")


class Terminal:
    """A process on a pseudo-terminal: type lines, wait for text."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
        )
        os.close(slave)
        self.screen = ""
        self.seen = 0  # what earlier expectations consumed

    def expect(self, text: str, timeout: float = 15.0) -> None:
        """Wait until ``text`` appears after what earlier expectations matched."""
        deadline = time.monotonic() + timeout
        while text not in self.screen[self.seen :]:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"did not see {text!r}; screen so far:\n{self.screen}"
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:
                    chunk = b""
                assert chunk, f"process ended before {text!r}:\n{self.screen}"
                self.screen += chunk.decode(errors="replace")
        self.seen = self.screen.index(text, self.seen) + len(text)

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def close(self) -> int:
        os.write(self.master, b"\x04")  # Ctrl-D leaves the chat
        try:
            return self.proc.wait(timeout=10)
        finally:
            os.close(self.master)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_interactive_chat_streams_answers_runs_tools_and_keeps_history(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_provider(site)
    script = [
        {"text": "Hello! How can I help?"},
        {"calls": [{"name": "roll"}]},
        {"text": "You rolled a 4."},
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(
        HERMES_HOME=str(home),
        HERMES_PLUGINS="tty_scripted",
        SCRIPT_FILE=str(tmp_path / "script.json"),
        PYTHONPATH=os.pathsep.join([str(site), env.get("PYTHONPATH", "")]),
        TERM="dumb",
    )
    hermes = str(Path(sys.executable).with_name("hermes"))
    term = Terminal([hermes], env)
    term.expect("script via scripted")
    term.expect("> ")
    term.type("hi")
    term.expect("Hello! How can I help?")
    term.expect("> ")
    term.type("/tools")
    term.expect("roll")
    term.expect("> ")
    term.type("roll a die please")
    term.expect("[+] roll")
    term.expect("You rolled a 4.")
    term.expect("> ")
    assert term.close() == 0
    history = (home / ".chat_history").read_text()
    assert "roll a die please" in history


def _chat_env(tmp_path: Path, script: list[dict], plugins: str = "tty_scripted") -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    if not (site / "tty_scripted.py").exists():
        install_provider(site)
    (tmp_path / "script.json").write_text(json.dumps(script))
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(
        HERMES_HOME=str(home),
        HERMES_PLUGINS=plugins,
        SCRIPT_FILE=str(tmp_path / "script.json"),
        PYTHONPATH=os.pathsep.join([str(site), env.get("PYTHONPATH", "")]),
        TERM="dumb",
    )
    return env


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_the_approval_prompt_stands_alone_while_the_spinner_waits(tmp_path: Path) -> None:
    env = _chat_env(tmp_path, [{"calls": [{"name": "wipe"}]}, {"text": "All clean."}])
    term = Terminal([str(Path(sys.executable).with_name("hermes"))], env)
    term.expect("> ")
    term.type("clean up")
    term.expect("approval needed: wipes")
    term.expect("[d]eny")
    time.sleep(0.6)  # six spinner frames, were it still running
    ready, _, _ = select.select([term.master], [], [], 0.2)
    after = os.read(term.master, 4096).decode(errors="replace") if ready else ""
    assert not any(frame in after for frame in ("\r|", "\r/", "\r-", "\r\\")), repr(after)
    term.screen += after
    term.seen = len(term.screen)
    term.type("o")
    term.expect("[+] wipe")
    term.expect("All clean.")
    term.expect("> ")
    assert term.close() == 0


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_slash_commands_print_tables_and_name_unknown_ones(tmp_path: Path) -> None:
    env = _chat_env(tmp_path, [{"text": "Hi."}])
    term = Terminal([str(Path(sys.executable).with_name("hermes"))], env)
    term.expect("> ")
    term.type("hello")
    term.expect("Hi.")
    term.expect("> ")
    term.type("/usage")
    term.expect("input tokens")
    term.expect("total tokens")
    term.expect("> ")
    term.type("/frobnicate")
    term.expect("unknown command /frobnicate; /help lists the commands")
    term.expect("> ")
    assert term.close() == 0


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_resuming_is_announced_and_a_broken_plugin_is_announced_once(tmp_path: Path) -> None:
    env = _chat_env(
        tmp_path, [{"text": "First."}, {"text": "Second."}], plugins="tty_scripted,tty_broken"
    )
    install_provider(tmp_path / "site", "tty_broken", "raise ImportError('no such thing')\n")
    hermes = str(Path(sys.executable).with_name("hermes"))
    first = subprocess.run(
        [hermes, "chat", "-q", "remember the garden", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("plugin(s) failed to load (tty_broken)") == 1
    session_id = json.loads(first.stdout)["session_id"]
    term = Terminal([hermes, "chat", "--resume", session_id[:-3]], env)
    term.expect(f"resumed session {session_id}: remember the garden, 2 messages")
    term.expect("1 plugin(s) failed to load (tty_broken); `hermes plugins list` shows why")
    term.expect("> ")
    assert term.screen.count("failed to load") == 1
    assert term.close() == 0


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_the_banner_says_when_the_sandbox_is_off(tmp_path: Path) -> None:
    env = _chat_env(tmp_path, [{"text": "Hi."}])
    hermes = str(Path(sys.executable).with_name("hermes"))
    term = Terminal([hermes, "chat"], env)
    term.expect("> ")
    assert "sandbox OFF" not in term.screen
    assert term.close() == 0
    (tmp_path / "home" / "config.yaml").write_text("terminal:\n  sandbox: off\n")
    term = Terminal([hermes, "chat"], env)
    term.expect("sandbox OFF (terminal.sandbox: off): commands run with your full authority")
    term.expect("> ")
    assert term.close() == 0
