"""hermes's command policy: a shell command parsed with a real grammar (tree-sitter-bash) and
decided by rules written as data.

>>> from hermes_policy_commands import decide
>>> decide("rm -rf ~").decision
'never'

:func:`decide` answers a :class:`Verdict` (``allow``, ``ask`` or ``never``, the rules that matched
and their justifications); :func:`policy_from_config` adds the ``approvals.rules``,
``approvals.extra_patterns`` and ``approvals.allow`` of a configuration. The parser is imported
on first use, so importing this package costs nothing at start-up. ``docs/approvals.md`` tells
how a command is decided and how to add a rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "Finding",
    "Policy",
    "Rule",
    "RuleError",
    "Verdict",
    "classify",
    "compile_allow",
    "decide",
    "default_policy",
    "load_rules",
    "policy_from_config",
    "rules_from_config",
    "write_concern",
]

if TYPE_CHECKING:
    from .engine import Finding, Rule, RuleError, classify
    from .policy import (
        Policy,
        Verdict,
        compile_allow,
        decide,
        default_policy,
        load_rules,
        policy_from_config,
        rules_from_config,
    )

_WHERE = {
    "Finding": "engine", "Rule": "engine", "RuleError": "engine", "classify": "engine",
    "load_rules": "policy", "Policy": "policy", "Verdict": "policy", "compile_allow": "policy",
    "decide": "policy", "default_policy": "policy", "policy_from_config": "policy",
    "rules_from_config": "policy", "write_concern": "paths",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    """Import the public names on first use (the parser loads only when a command is decided)."""
    if name not in _WHERE:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
