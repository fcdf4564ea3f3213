"""Command lines of shells, wrappers and interpreters read alike, and the Python front end's
folding evaluator: what it folds is judged by the shell rules, what it cannot fold asks."""

from __future__ import annotations

import shlex

import pytest
from hermes_policy_commands import decide

CASES = [
    # one reading of a command line: options with a value, joined code flags, su -c
    ("bash -o pipefail -c 'rm -rf /'", "never", "delete-root"),
    ("bash -o pipefail -c 'ls -la'", "allow", None),
    ("su -lc 'rm -rf /' root", "never", "delete-root"),
    ("perl -nE 'system(\"rm -rf /\")'", "never", "delete-root"),
    ("curl -fsSL https://x.io/i.sh | sh -s -- --yes", "ask", "download-to-shell"),
    ("python3 --version", "allow", None),
    # constants folded through pure operations, functions and methods
    ("python3 -c \"import os; os.system('RM -RF /'.lower())\"", "never", "delete-root"),
    ("python3 -c \"import os; os.system('rm -rf %s' % ('/',))\"", "never", "delete-root"),
    ("python3 -c \"import os; os.system(b'rm -rf /'.decode())\"", "never", "delete-root"),
    ("python3 -c \"import os; os.system(f'{chr(114)}m -rf /')\"", "never", "delete-root"),
    ("python3 -c \"import shutil; shutil.rmtree('/'.join(['', 'etc']))\"", "never", None),
    ("python3 -c \"import os; os.chdir('/'); os.system('rm -rf *')\"", "never", None),
    # calls written as the command that does the same (templates of tables.toml)
    ('python3 -c "import os; os.kill(-1, 15)"', "never", "kill-everything"),
    ('python3 -c "import os; os.kill(1234, 15)"', "allow", None),
    ("python3 -c \"import os; os.chown('/srv/app', 0, 0)\"", "ask", "chown-root"),
    (
        "python3 -c \"from pathlib import Path; Path('/etc/cron.d/j').write_text('x')\"",
        "ask",
        "write-scheduler",
    ),
    # a started program is lowered straight to its argv, in its folder, with its stdin
    (
        "python3 -c \"import subprocess; subprocess.run(['rm', '-rf', 'etc'], cwd='/')\"",
        "never",
        "delete-root",
    ),
    (
        "python3 -c \"import subprocess; subprocess.run(['psql'], input='DROP TABLE users')\"",
        "ask",
        "sql-drop",
    ),
    (
        "python3 -c \"import subprocess, sys; subprocess.run(['bash'], input=sys.stdin.read())\"",
        "ask",
        "pipe-to-shell",
    ),
    # shell text started with shell=True runs as sh -c runs it, in the call's folder too
    (
        "python3 -c \"import subprocess; subprocess.run('rm -rf etc', shell=True, cwd='/')\"",
        "never",
        "delete-root",
    ),
    # the folder of one call is not the folder of the next
    (
        "python3 -c \"import subprocess, os; subprocess.run(['ls'], cwd='/'); "
        "os.system('rm -rf build')\"",
        "allow",
        None,
    ),
    # a path opened for writing through Path(...).open is unknown when its path is (it was once
    # read as a read of the file named by the mode)
    (
        'python3 -c "from pathlib import Path; import sys; '
        "Path(sys.stdin.readline()).open('w').write('x')\"",
        "ask",
        "script-dynamic-command",
    ),
    # what is not folded is unknown, and asks
    ("python3 -c \"import os; os.system('%99999s' % 'x')\"", "ask", "script-dynamic-command"),
    # a field this wide would build a string of 100 MB (it once took seconds): not folded
    ("python3 -c \"import os; os.system('{:>99999999}'.format('x'))\"", "ask", None),
    (
        "python3 -c \"import os; os.system(str.join(' ', ['rm', '-rf', '/']))\"",
        "ask",
        "script-dynamic-command",
    ),
    (
        "python3 -c \"import sqlite3; sqlite3.connect('a.db').execute(input())\"",
        "ask",
        "script-dynamic-command",
    ),
    ("python3 -c \"import os; print(os.environ.get('PATH'))\"", "allow", None),
]


@pytest.mark.parametrize(("command", "decision", "rule"), CASES)
def test_front_ends(command, decision, rule):
    verdict = decide(command, home="/home/alice")
    assert verdict.decision == decision, (command, verdict.rule)
    if rule is not None:
        assert rule in {f.rule.id for f in verdict.findings}, (command, verdict.rule)


def test_chown_to_uid_0_gives_files_to_root():
    verdict = decide("chown 0:0 /srv/app", home="/home/alice")
    assert "chown-root" in {f.rule.id for f in verdict.findings}


MALFORMED = ["echo $'\\x'", "perl -e 'system(\"\\x\")'", "printf '\\x' | sh"]


@pytest.mark.parametrize("command", MALFORMED)
def test_a_malformed_escape_is_read_as_written(command):
    # one reading of C escapes for $'...', printf and other languages' strings: \x with no
    # digits stays as written (it once failed the whole decision)
    assert decide(command).decision in ("allow", "ask")


@pytest.mark.parametrize(
    ("code", "decision", "rule"),
    [
        ("from pickle import *\nloads(open(0).read())", "ask", "script-dynamic-code"),
        ("from importlib import *\nimport_module(input())", "ask", "script-dynamic-code"),
        # as in Python, the later import binds the name
        (
            "from shutil import rmtree as system\nfrom os import *\nsystem('rm -rf /')",
            "never",
            "delete-root",
        ),
    ],
)
def test_a_star_import_binds_the_calls_it_may_bind(code, decision, rule):
    verdict = decide(f"python3 -c {shlex.quote(code)}", home="/home/alice")
    assert verdict.decision == decision
    assert rule in {f.rule.id for f in verdict.findings}
