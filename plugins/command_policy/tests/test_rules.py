"""Rules as data: every builtin rule matches its examples, config rules are checked the same way,
and the config keys of the old checker keep working."""

from __future__ import annotations

import re

import pytest
from hermes_policy_commands import RuleError, decide, load_rules, policy_from_config
from hermes_policy_commands.engine import builtin_rules, classify

FAMILIES = {"10-deletes", "20-disks-power", "30-privilege-persistence", "40-runs-programs",
            "50-secrets", "60-exfiltration", "70-remote-code", "80-data-infra", "90-hermes",
            "95-unresolved", "99-everyday"}  # fmt: skip


def test_every_rule_matches_its_examples_at_load():
    rules = load_rules()
    assert {r.family for r in rules} == FAMILIES
    assert all(r.justification and "\n" not in r.justification for r in rules)
    assert sum(len(r.match) for r in rules) >= 150


def test_a_rule_failing_its_own_example_is_an_error_at_load():
    broken = {"id": "mine", "decision": "ask", "justification": "x", "program": ["git"],
              "subcommand": ["push"], "match": ["git pull"]}  # fmt: skip
    with pytest.raises(RuleError, match="rule mine does not match its example 'git pull'"):
        policy_from_config({"approvals": {"rules": [broken]}})
    counter = {**broken, "match": ["git push"], "not_match": ["git push origin x"]}
    with pytest.raises(RuleError, match="matches its counter-example"):
        policy_from_config({"approvals": {"rules": [counter]}})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"id": "x", "decision": "maybe", "justification": "j"}, "decision must be one of"),
        ({"id": "x", "decision": "ask", "justification": ""}, "justification must be one line"),
        ({"id": "x", "decision": "ask", "justification": "j", "args": "("}, "invalid regular"),
        ({"id": "x", "decision": "ask", "justification": "j", "colour": 1}, "unknown keys"),
        ({"id": "x", "decision": "ask", "justification": "j", "subcommand": 3}, "or a list"),
        ({"id": "x", "decision": "ask", "justification": "j", "program": [1]}, "list of strings"),
        ({"id": "x", "decision": "ask", "justification": "j", "max_args": "2"}, "an integer"),
    ],
)
def test_malformed_config_rules_are_errors(entry, message):
    with pytest.raises(RuleError, match=message):
        policy_from_config({"approvals": {"rules": [entry]}})


def test_user_rules_extra_patterns_and_allow():
    config = {
        "approvals": {
            "rules": [
                {
                    "id": "deploy",
                    "decision": "never",
                    "justification": "deploys",
                    "program": "make",
                    "subcommand": ["deploy"],
                    "match": ["make deploy"],
                    "not_match": ["make test"],
                }
            ],  # fmt: skip
            "extra_patterns": [{"pattern": "^terraform apply", "description": "infra"}],
            "allow": [r"^git push --force$"],
        }
    }
    policy = policy_from_config(config)
    assert decide("sudo make deploy", policy).rule == "deploy"
    assert decide("terraform apply", policy).decision == "ask"
    assert decide("git push --force", policy).decision == "allow"
    assert decide("git push --force && rm -rf /tmp/x", policy).rule == "recursive-delete"
    assert decide("rm -rf /", policy.__class__(policy.rules, policy.allow)).decision == "never"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/", {"root"}),
        ("/usr/lib", {"system-top"}),
        ("~", {"home-top"}),
        (".", {"workspace-self"}),
        ("build/x", {"build"}),
        ("../x", {"outside"}),
        ("~/.ssh/id_rsa", {"secret", "ssh"}),
        ("/dev/sda", {"device"}),
        ("~/.hermes/config.yaml", {"hermes"}),
        ("src/.env", {"env-file", "secret"}),
        ("/proc/1/environ", {"secret"}),
        ("\x00/x", {"unknown"}),
    ],
)
def test_path_classes(path, expected):
    assert expected <= classify(path)


def test_builtin_ids_are_unique():
    ids = [r.id for r in builtin_rules()]
    assert len(ids) == len(set(ids))


def test_the_finer_classes_are_searched_where_they_can_match():
    from hermes_policy_commands import engine

    samples = ["/etc/ssh/x", "/etc/shadow", "/proc/1/environ", "/dev/sda", "/sys/x", "x/.env",
               "~/.ssh/id_rsa", "id_ed25519", "~/.aws/credentials", "~/.hermes/state.db",
               "~/.bashrc", "~/.bash_history", ".git/hooks/x", "/var/spool/cron/x",
               "~/Library/LaunchAgents/x", "a.pth", "sitecustomize.py", "authorized_keys",
               "/etc/cron.d/x", "/proc/sysrq-trigger", "/etc/profile", "a.config/git/config",
               "k.pem", "x.histfile", "u/.pythonstartup", "~/.config/fish/config.fish",
               "/dev/tcp/127.0.0.1/9", "~/.mozilla/firefox/x/logins.json",
               "~/.password-store/x.gpg", "~/.local/bin/x", "~/.vimrc"]  # fmt: skip
    for name, pattern in engine._PATTERNS:
        assert any(re.search(pattern, p) for p in samples), name
    for sample in samples:
        for path in (sample, "src/a/" + sample.lstrip("/~"), "w/x.y/" + sample.lstrip("/~")):
            full = {n for n, rx in engine._CLASS_RE.items() if rx.search(path)}
            probe = engine._probe(path)
            fast = {n for n, rx in engine._CLASS_RE.items() if probe and rx.search(probe)}
            assert fast == full, path
