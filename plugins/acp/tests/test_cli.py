"""``hermes acp --check`` in one line, and the start-up discipline: ``hermes --help`` loads no
part of the protocol SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from acp_client import HERMES, hermes_env

from hermes_core.testing import FakeLLM


def _check(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HERMES, "acp", "--check"], env=hermes_env(home), capture_output=True, text=True, timeout=60
    )


def test_check_says_ready_in_one_line(home: Path, llm: FakeLLM) -> None:
    done = _check(home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    assert done.stdout.startswith("ready: model fake-model (custom); sandbox off")
    assert "store" in done.stdout


def test_check_names_what_is_missing(tmp_path: Path) -> None:
    home = tmp_path / "empty"
    home.mkdir()
    (home / "sessions.db").mkdir()  # a store that cannot open
    done = _check(home)
    assert done.returncode == 1
    line = done.stdout.strip()
    assert "\n" not in line and line.startswith("not ready: ")
    assert "provider: no model is configured" in line and "hermes setup" in line
    assert "session store:" in line
    assert "Traceback" not in done.stderr


def test_help_loads_no_part_of_the_protocol_sdk(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "import hermes_core.cli\n"
        "try:\n"
        "    hermes_core.cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m == 'acp' or m.startswith('acp.'))\n"
        "print('LOADED', loaded)\n"
    )
    env = hermes_env(tmp_path)
    env.pop("HERMES_PLUGINS")  # every installed plugin, this one included
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert "LOADED []" in done.stdout, done.stdout + done.stderr
    assert "acp " in done.stdout  # the command is listed


def test_stdout_to_a_file_is_one_line_without_a_traceback(
    home: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    with open(tmp_path / "out.txt", "wb") as out:
        done = subprocess.run(
            [HERMES, "acp"],
            env=hermes_env(home),
            input=b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n',
            stdout=out,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    assert done.returncode == 1
    error = done.stderr.decode().strip()
    assert "through pipes" in error and "Traceback" not in error and "\n" not in error
