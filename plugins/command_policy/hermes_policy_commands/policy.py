"""The public entry point: :func:`decide` a command, and the configuration it reads.

``decide`` parses the command once (:mod:`.shell`), lowers other languages' code through the
front ends (:mod:`.python_code`, :mod:`.foreign_code`), matches every simple command against the
rules (:mod:`.engine`) and answers a :class:`Verdict`: the decision, the rules that matched
with the command each one matched (its target), and the simple commands themselves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from .engine import (
    Context,
    Finding,
    Index,
    Rule,
    RuleError,
    builtin_rules,
    check_examples,
    judge,
    rule_from_mapping,
    strictest,
)
from .shell import Lowering, ScriptReader, Simple

__all__ = [
    "MAX_COMMAND",
    "Policy",
    "Verdict",
    "compile_allow",
    "decide",
    "findings_for",
    "load_rules",
    "policy_from_config",
    "rules_from_config",
]

MAX_COMMAND = 100_000
"""A longer command is not read: it asks."""


@dataclass(frozen=True)
class Verdict:
    """The decision about one command.

    :param decision: ``allow``, ``ask`` or ``never``.
    :param findings: every rule that matched, with the simple command it matched.
    :param commands: the simple commands the command would run.
    """

    decision: str
    findings: tuple[Finding, ...]
    commands: tuple[Simple, ...]

    @property
    def asked(self) -> tuple[Finding, ...]:
        """The findings that decide: ``never`` ones when there are any, else ``ask`` ones."""
        if self.decision == "allow":
            return ()
        return tuple(f for f in self.findings if f.decision == self.decision)

    @property
    def rule(self) -> str | None:
        """The id of the first deciding rule (``None`` when nothing matched)."""
        deciding = self.asked or self.findings
        return deciding[0].rule.id if deciding else None

    @property
    def justification(self) -> str:
        """The deciding rules' justifications, each once."""
        deciding = self.asked or self.findings
        return "; ".join(dict.fromkeys(f.rule.justification for f in deciding))

    def as_json(self, command: str) -> dict[str, Any]:
        """The ``hermes approvals check --json`` line for this verdict."""
        return {
            "command": command,
            "decision": self.decision,
            "rule": self.rule,
            "justification": self.justification,
        }


@dataclass(frozen=True)
class Policy:
    """Rules and allow patterns, ready to decide with.

    :param rules: every rule (builtin first, then the configured ones).
    :param allow: ``approvals.allow`` patterns: a finding whose target or command they match is
        excused unless it is ``never``.
    """

    rules: tuple[Rule, ...]
    allow: tuple[re.Pattern[str], ...] = ()

    @cached_property
    def index(self) -> Index:
        """The rules grouped by program (built once per policy, kept on it: hashing every
        rule at each decision would cost more than the decision)."""
        return Index(self.rules)


def lower(
    command: str, *, cwd: str | None = None, read_script: ScriptReader | None = None
) -> list[Simple]:
    """The simple commands ``command`` would run (see :class:`~.shell.Lowering`)."""
    lowering = Lowering(read_script, cwd)
    if len(command) > MAX_COMMAND:
        lowering.note("uncheckable")
        return lowering.out
    try:
        lowering.read(command)
    except RecursionError:
        lowering.note("uncheckable")
    return lowering.out


def decide(
    command: str,
    policy: Policy | None = None,
    *,
    home: str = "",
    cwd: str | None = None,
    workspace: str = "",
    hermes_home: str = "",
    read_script: ScriptReader | None = None,
    walls: frozenset[str] = frozenset(),
    home_allow: tuple[str, ...] = (),
) -> Verdict:
    """Decide ``command``: parse it, lower it, match the rules, apply the allow patterns.

    :param home: the home folder (paths under it are judged as ``~/...``).
    :param cwd: the folder the command starts in when that is not the workspace.
    :param workspace: the workspace folder (absolute paths under it are inside).
    :param hermes_home: hermes's home folder (writes there are ``never``).
    :param read_script: reads the script files the command runs; ``None`` reads none.
    :param walls: the sandbox's walls around the command (``sandbox``, ``offline``): rules
        about what they contain allow, saying so.
    :param home_allow: paths of the home folder (``~/...``) commands may see besides the
        toolchains'.
    """
    policy = policy or default_policy()
    simples = lower(command, cwd=cwd, read_script=read_script)
    context = Context(home, workspace, hermes_home, walls, tuple(home_allow))
    findings = judge(simples, policy.index, context)
    searched = [rule for rule in policy.rules if rule.command is not None]
    views = [command] + [s.render() for s in simples] if searched else []
    for rule in searched:
        if any(rule.command is not None and rule.command.search(v) for v in views):
            findings.append(Finding(rule, command))
    if policy.allow:
        findings = [f for f in findings if f.hard or not _excused(f, command, policy.allow)]
    findings.sort(key=lambda f: ("never", "ask", "allow").index(f.decision))
    return Verdict(strictest(findings), tuple(findings), tuple(simples))


def _excused(finding: Finding, command: str, allow: Sequence[re.Pattern[str]]) -> bool:
    if finding.decision == "allow":
        return True
    return any(p.search(finding.text) or p.search(command) for p in allow)


def findings_for(command: str, rules: tuple[Rule, ...]) -> list[Finding]:
    """Every finding of ``rules`` on ``command`` (used to check the rules' examples)."""
    return list(decide(command, Policy(rules), home="/home/user").findings)


def load_rules(extra: Sequence[Rule] = ()) -> tuple[Rule, ...]:
    """The builtin rules and ``extra``, every example checked (:class:`RuleError` if one fails)."""
    rules = builtin_rules() + tuple(extra)
    check_examples(rules, lambda command, _rules: findings_for(command, rules))
    return rules


@lru_cache(maxsize=1)
def default_policy() -> Policy:
    """The builtin rules alone."""
    return Policy(builtin_rules())


# --- configuration ------------------------------------------------------------------------


def rules_from_config(entries: Any) -> list[Rule]:
    """``approvals.extra_patterns`` as rules: each a regular expression searched in the command
    and in every simple command it runs (``hard: true`` makes it ``never``)."""
    if entries in (None, []):
        return []
    if not isinstance(entries, list):
        raise RuleError("extra_patterns must be a list")
    rules = []
    for i, entry in enumerate(entries):
        item = {"pattern": entry} if isinstance(entry, str) else entry
        if not isinstance(item, Mapping) or not isinstance(item.get("pattern"), str):
            raise RuleError(f"extra_patterns[{i}] must be a mapping with a pattern")
        try:
            pattern = re.compile(item["pattern"])
        except re.error as exc:
            raise RuleError(f"extra_patterns[{i}]: invalid regular expression: {exc}") from None
        rules.append(
            Rule(
                id=str(item.get("id") or f"config-{i + 1}"),
                decision="never" if item.get("hard") else "ask",
                justification=str(item.get("description") or f"matches {item['pattern']!r}"),
                command=pattern,
                family="config",
                source="config",
            )
        )
    return rules


def compile_allow(entries: Any) -> tuple[re.Pattern[str], ...]:
    """``approvals.allow`` compiled (a malformed entry is a :class:`RuleError`)."""
    if entries in (None, []):
        return ()
    if not isinstance(entries, list):
        raise RuleError("approvals.allow must be a list")
    out = []
    for i, entry in enumerate(entries):
        try:
            out.append(re.compile(str(entry)))
        except re.error as exc:
            raise RuleError(f"approvals.allow[{i}]: invalid regular expression: {exc}") from None
    return tuple(out)


def policy_from_config(config: Mapping[str, Any]) -> Policy:
    """The policy of a configuration: the builtin rules, ``approvals.rules`` (the rules' own
    format, examples checked), ``approvals.extra_patterns`` and ``approvals.allow``;
    :class:`RuleError` when any of it is malformed."""
    approvals = config.get("approvals") if isinstance(config, Mapping) else None
    approvals = approvals if isinstance(approvals, Mapping) else {}
    key = repr((approvals.get("rules"), approvals.get("extra_patterns"), approvals.get("allow")))
    return _configured(key, approvals)


_CONFIGURED: dict[str, Policy] = {}


def _configured(key: str, approvals: Mapping[str, Any]) -> Policy:
    if key in _CONFIGURED:
        return _CONFIGURED[key]
    entries = approvals.get("rules") or []
    if not isinstance(entries, list):
        raise RuleError("approvals.rules must be a list")
    own = [rule_from_mapping(e, f"approvals.rules[{i}]", "config") for i, e in enumerate(entries)]
    if own:
        everything = builtin_rules() + tuple(own)
        check_examples(own, lambda c, _r: findings_for(c, everything))
    rules = builtin_rules() + tuple(own) + tuple(rules_from_config(approvals.get("extra_patterns")))
    policy = Policy(rules, compile_allow(approvals.get("allow")))
    if len(_CONFIGURED) > 32:
        _CONFIGURED.clear()
    _CONFIGURED[key] = policy
    return policy
