"""Start-up stays light: importing the core and running `hermes --help` (or `hermes plugins list`)
must not import any provider SDK, container or remote-execution client, HTTP or schema library, and
no YAML parser when there is no config.yaml to read.

Each check runs in a fresh interpreter, with every installed plugin loaded as a user would have
them, so a plugin that imports its heavy dependency at module level fails this test too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "openai",
    "anthropic",
    "docker",
    "paramiko",
    "asyncssh",
    "modal",
    "httpx",
    "httpx2",
    "pydantic",
    "http.server",
    "requests",
    "jsonschema",
    "mcp",
    "mcp_types",
    "yaml",
    # the interactive chat's rendering and prompt: imported when a chat starts
    "rich",
    "prompt_toolkit",
    "pygments",
    "markdown_it",
    "trafilatura",
    "lxml",
    "pypdf",
    "tavily",
    "exa_py",
    "playwright",
    "psycopg",
    "psycopg_pool",
    # the tracing plugin's SDK and exporters: imported when the first traced turn starts
    "opentelemetry",
    "google",
)

PROBE = """
import json, sys
{body}
heavy = {heavy!r}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
hermes_core = sorted(m for m in sys.modules if m.split(".")[0] == "hermes_core")
sys.stdout.write("\\n@@PROBE@@" + json.dumps({{"loaded": loaded, "hermes_core": hermes_core,
                                                "code": code}}))
"""


def probe(body: str, home: Path) -> dict:
    """Run ``body`` (which sets ``code``) in a fresh interpreter; report what it imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(home)
    env.pop("PYTHONSTARTUP", None)
    source = PROBE.format(body=body, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", source],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=home,
    )
    assert done.returncode == 0, done.stderr
    marker = done.stdout.rfind("@@PROBE@@")
    assert marker >= 0, f"no report from the probe:\n{done.stdout}\n{done.stderr}"
    report = json.loads(done.stdout[marker + len("@@PROBE@@") :])
    report["stdout"] = done.stdout[:marker]
    report["stderr"] = done.stderr
    return report


@pytest.fixture
def empty_home(tmp_path: Path) -> Path:
    home = tmp_path / "hermes-home"
    home.mkdir()
    return home


def test_import_hermes_core_is_light(empty_home: Path) -> None:
    report = probe("import hermes_core\ncode = 0", empty_home)
    assert report["loaded"] == []


@pytest.mark.parametrize("argv", [["--help"], ["plugins", "list"]], ids=["help", "plugins-list"])
def test_cli_start_up_imports_no_heavy_module(empty_home: Path, argv: list[str]) -> None:
    body = f"import hermes_core.cli\ncode = hermes_core.cli.main({argv!r})"
    report = probe(body, empty_home)
    assert report["code"] == 0, report["stderr"]
    assert report["loaded"] == [], (
        f"`hermes {' '.join(argv)}` imported {report['loaded']}; plugins and the core must import "
        "heavy dependencies inside the functions that need them"
    )
    if argv == ["--help"]:
        assert "Commands:" in report["stdout"]
    assert not (empty_home / "config.yaml").exists(), "start-up must not create config.yaml"


def test_yaml_is_imported_only_when_a_config_file_exists(empty_home: Path) -> None:
    # The converse of the test above: the probe does see yaml once there is a file to read, so an
    # empty "loaded" list above is not an accident of the probe.
    (empty_home / "config.yaml").write_text("agent:\n  max_turns: 5\n", encoding="utf-8")
    report = probe("import hermes_core.cli\ncode = hermes_core.cli.main(['--help'])", empty_home)
    assert report["code"] == 0, report["stderr"]
    assert "yaml" in report["loaded"]


def test_hookspecs_do_not_import_the_core(empty_home: Path) -> None:
    report = probe("import hermes_hookspecs\ncode = 0", empty_home)
    assert report["hermes_core"] == []
    assert report["loaded"] == []
