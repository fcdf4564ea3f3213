"""The checker's API: views, config rules, allow patterns, sensitive paths."""

from __future__ import annotations

import pytest
from hermes_toolset_terminal.danger import (
    RULES,
    check,
    compile_allow,
    normalise,
    rules_from_config,
    scan,
    sensitive_path,
)


def test_views_show_what_the_shell_would_run():
    views = normalise(
        "sudo env X=1 /bin/rm -rf \"$HOME\"/tmp; echo 'a b' | base64", home="/h"
    ).views
    assert "sudo env" in views  # each wrapper with the program it runs
    assert "env X=1 /bin/rm" in views
    assert "rm -rf ~/tmp" in views
    assert "echo a b | base64" in views


def test_home_path_is_written_as_tilde():
    assert check("rm -rf /home/alice/", home="/home/alice")[0].rule.id == "delete-root"
    assert check("rm -rf /home/alice/x", home="/home/alice")[0].rule.id == "recursive-delete"


def test_rules_are_unique_and_documented():
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))
    assert all(rule.description and rule.pattern for rule in RULES)
    assert [r.hard for r in RULES] == sorted((r.hard for r in RULES), reverse=True)


def test_rules_from_config():
    rules = rules_from_config(
        [{"pattern": "^deploy", "description": "deploying"}, "^nuke", {"pattern": "x", "hard": 1}]
    )
    assert [(r.id, r.description, r.hard, r.source) for r in rules] == [
        ("config-1", "deploying", False, "config"),
        ("config-2", "matches '^nuke'", False, "config"),
        ("config-3", "matches 'x'", True, "config"),
    ]
    assert scan("sudo deploy now", rules)[0].rule.id == "config-1"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{"description": "no pattern"}], "extra_patterns[0] must be a mapping"),
        ([{"pattern": "("}], "extra_patterns[0]: invalid regular expression"),
    ],
)
def test_bad_config_rules(entries, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        rules_from_config(entries)


def test_allow_patterns_excuse_only_what_they_match():
    allow = compile_allow([r"^git push --force$"])
    assert check("git push --force", allow=allow) == []
    left = check("git push --force && rm -rf /tmp/build", allow=allow)
    assert [f.rule.id for f in left] == ["recursive-delete"]
    assert check("rm -rf /", allow=compile_allow([".*"]))[0].hard
    with pytest.raises(ValueError, match=r"approvals.allow\[0\]"):
        compile_allow(["("])


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        (".env", "write-env-file"),
        ("config/.env.local", "write-env-file"),
        ("~/.ssh/authorized_keys", "write-ssh"),
        ("/root/.ssh/config", "write-ssh"),
        ("/etc/hosts", "write-system-config"),
        ("~/.bashrc", "write-startup-file"),
        ("/home/alice/.zshrc", "write-startup-file"),
        ("~/.aws/credentials", "write-credentials"),
        ("~/.hermes/config.yaml", "write-hermes-config"),
        (".env.example", None),
        ("src/app.py", None),
        ("docs/etc/notes.md", None),
    ],
)
def test_sensitive_paths(path, rule):
    found = sensitive_path(path, home="/home/alice")
    assert (found.rule.id if found else None) == rule


DELETES = [
    ("rm -rf ./build/ dist/* notes.txt", ["./build", "dist", "notes.txt"]),
    ("rm -f build", []),  # not recursive: no rule cares where it leads
    ("rm -r -- -x build", ["-x", "build"]),
    ("find -L out/ node_modules -name '*.o' -delete", ["out", "node_modules"]),
    ("find build -exec rm -rf {} +", ["build"]),
    ("find build -name x", []),
    ("rsync -a --delete src/ build/", ["build"]),
    ("cd sub && rm -rf out/x", ["sub/out/x"]),
    ("echo build | xargs rm -rf", ["build"]),
    ("find build -type f | xargs rm", ["build"]),
    ("rm -rf $X * ./*", []),
]


@pytest.mark.parametrize(("command", "expected"), DELETES)
def test_delete_operands_are_listed(command, expected):
    assert normalise(command, home="/h").deletes == expected


def test_resolved_operands_are_seen_where_they_lead():
    command = "rm -rf build/* dist/"
    first = normalise(command, home="/h")
    resolved = normalise(command, home="/h", resolved={"build": "/h", "dist": None})
    assert check(command, home="/h", normalised=first) == []
    assert "rm -rf ~/* dist/" in resolved.views
    assert check(command, home="/h", normalised=resolved)[0].rule.id == "delete-root"
    outside = normalise(command, home="/h", resolved={"build": "/srv/x/", "dist": None})
    assert [f.rule.id for f in check(command, home="/h", normalised=outside)] == [
        "recursive-delete"
    ]


def test_an_operand_left_unresolved_or_too_many_operands_are_uncheckable():
    unanswered = normalise("rm -rf build", home="/h", resolved={})
    assert "uncheckable" in unanswered.notes
    many = normalise("rm -rf " + " ".join(f"build/{i}" for i in range(65)), home="/h")
    assert len(many.deletes) == 64 and "uncheckable" in many.notes
