"""Issue 31: `allow` means every part of a command was read and judged harmless.

Every dangerous family is spelled many ways by :mod:`dangerous_families` (computed names, every
interpreter name, quoting, attached and abbreviated options...) and each spelling must ask or
be refused; each family's look-alikes must run. The everyday corpus (``everyday_commands.txt``)
keeps the false alarms at or under 2 %. Nothing here runs a command: the strings go to the
policy only.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hermes_policy_commands import decide
from hermes_policy_commands.situated import Situation, judge_command, local_files, situation

HERE = Path(__file__).resolve().parent


def _families():
    spec = importlib.util.spec_from_file_location(
        "dangerous_families", HERE / "dangerous_families.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_F = _families()
FAMILIES, HOME, dangerous, look_alikes = _F.FAMILIES, _F.HOME, _F.dangerous, _F.look_alikes
EVERYDAY = [
    line
    for line in (HERE / "everyday_commands.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("# ")
]
SCRIPTS = {
    "scripts/generate.py": "print('generated')\n",
    "manage.py": "import sys\nprint(sys.argv)\n",
    "setup.py": "from setuptools import setup\nsetup()\n",
    "index.js": "console.log('hi')\n",
    "scripts/build.js": "const fs = require('fs');\nconsole.log(fs.readdirSync('.'))\n",
    "build/app": "#!/bin/sh\necho app\n",
    "scripts/test.sh": "#!/bin/sh\nset -e\npytest -q\n",
    "configure": "#!/bin/sh\necho configured\n",
    "gradlew": "#!/bin/sh\necho gradle \"$@\"\n",
    "server.py": "print('serving')\n",
    "app.py": "print('app')\n",
    ".venv/bin/activate": "export VIRTUAL_ENV=.venv\n",
    ".venv/bin/pip": "#!/usr/bin/env python3\nprint('pip')\n",
    "script.rb": "puts 1\n",
    "artisan": "<?php echo 'artisan';\n",
    **{f"node_modules/.bin/{t}": "#!/usr/bin/env node\n" for t in
       ("tsc", "eslint", "prettier", "jest", "vitest", "vite")},
}  # fmt: skip
"""The workspace's files the everyday commands run (each harmless)."""


@pytest.fixture(scope="module")
def where(tmp_path_factory: pytest.TempPathFactory) -> Situation:
    """A project workspace holding the scripts and local tools the everyday commands use."""
    workspace = tmp_path_factory.mktemp("project")
    for name, text in SCRIPTS.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    config = {"terminal": {"sandbox": "off", "cwd": str(workspace)}}
    return situation(config, home=HOME, sandboxed=False)


def _decision(command: str, where: Situation) -> str:
    return judge_command(command, where, read_script=local_files(where.base)).decision


def test_everyday_work_stays_quiet(where):
    flagged = [c for c in EVERYDAY if _decision(c, where) != "allow"]
    assert len(EVERYDAY) >= 300
    assert len(flagged) <= 0.02 * len(EVERYDAY), flagged


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_spelling_of_a_dangerous_family_asks(family):
    spellings, _ = FAMILIES[family]
    allowed = [s for s in spellings if decide(s, home=HOME).decision == "allow"]
    assert not allowed


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_look_alikes_of_a_family_run(family):
    _, alikes = FAMILIES[family]
    assert [a for a in alikes if decide(a, home=HOME).decision != "allow"] == []


def test_the_generator_spells_each_command_many_ways():
    assert len(dangerous()) >= 400 and len(look_alikes()) >= 50
    computed = FAMILIES["computed names"][0]
    assert sum("rm" in s or "\\x72" in s or "\\162" in s for s in computed) >= 25


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("c=$(cat name.txt); $c -rf ~", "computed"),
        ('cat "$F"', "could not be read"),
        ("x=$(cat f); echo $((x))", "could not be read"),
        ("xonsh -c 'ls'", "cannot read"),
        ("python3 -c 'exec(input())'", "built or loaded when it runs"),
    ],
)
def test_what_could_not_be_read_says_so(command, says):
    verdict = decide(command, home=HOME)
    assert verdict.decision == "ask" and says in verdict.justification


def test_interpreters_are_known_by_family():
    for name in ("pypy3", "python2.7", "ipython", "python3.15", "/opt/x/bin/python3.12"):
        verdict = decide(f"{name} -c 'import shutil; shutil.rmtree(\"/usr\")'", home=HOME)
        assert verdict.decision == "never", name


def test_the_sandbox_contains_what_it_walls_in():
    """An environment dump and npx are contained inside the sandbox (no parent environment,
    no network): they run, and the justification says why; outside it they ask."""
    walled = frozenset({"sandbox", "offline"})
    for command in ("env", "printenv | sort", "npx cowsay hi", "jq -n env"):
        outside = decide(command, home=HOME)
        inside = decide(command, home=HOME, walls=walled)
        assert outside.decision == "ask" and inside.decision == "allow", command
        assert "sandbox" in inside.findings[0].rule.justification
    online = decide("npx cowsay hi", home=HOME, walls=frozenset({"sandbox"}))
    assert online.decision == "ask"  # the network is open: the download is real
    secret = decide("cat ~/.bash_history", home=HOME, walls=walled)
    assert secret.decision == "ask"  # secrets ask, sandbox or not


def test_home_allow_widens_what_commands_may_read():
    assert decide("cat ~/data/x.csv", home=HOME).decision == "ask"
    allowed = decide("cat ~/data/x.csv", home=HOME, home_allow=("~/data",))
    assert allowed.decision == "allow"


def test_a_workspace_in_the_home_folder_is_the_workspace(tmp_path):
    home = str(tmp_path)
    (tmp_path / "project").mkdir()
    config = {"terminal": {"cwd": str(tmp_path / "project")}}
    where = situation(config, home=home, sandboxed=False)
    assert judge_command(f"cat {home}/project/src/a.py", where).decision == "allow"
    assert judge_command(f"cat {home}/notes.txt", where).decision == "ask"
