"""``hermes --help`` and ``hermes batch --help`` import no Ray, no database driver, no Docker
SDK and no queue library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from hermes_core.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
heavy = ("ray", "psycopg", "psycopg_pool", "sqlite3", "docker", "procrastinate")
print("@@" + json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def _loaded(argv: list[str], home: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "@@" in done.stdout, done.stderr
    loaded: list[str] = json.loads(done.stdout.rpartition("@@")[2])
    return loaded


def test_help_imports_no_ray_and_no_driver(tmp_path):
    assert _loaded(["--help"], tmp_path) == []
    assert [m for m in _loaded(["batch", "--help"], tmp_path) if m != "sqlite3"] == []
