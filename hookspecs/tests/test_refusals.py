"""The refusal wording, without the core."""

from __future__ import annotations

import hermes_hookspecs as hs
from hermes_hookspecs.refusals import is_blocked


def test_a_refusal_starts_with_the_marker_names_the_rule_and_says_not_to_retry():
    text = hs.blocked("user-denied", "the user denied this command.", "rm -rf ~/projects")
    assert text.startswith("BLOCKED: the user denied this command (rule user-denied).")
    assert "rm -rf ~/projects" in text
    assert "Do not retry" in text
    assert is_blocked(text)
    assert not is_blocked("ok: BLOCKED: in the middle")
