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


    @hookimpl
    def hermes_register_toolsets(register):
        register(Toolset(name="dice", tools=[Tool(
            name="roll", description="Roll a die", parameters={"type": "object", "properties": {}},
            handler=lambda args, ctx: "4")]))
    '''
)


def install_provider(site: Path) -> None:
    (site / "tty_scripted.py").write_text(PROVIDER_MODULE)
    info = site / "tty_scripted-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tty-scripted\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[hermes]\ntty_scripted = tty_scripted\n")


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
