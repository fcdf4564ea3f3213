"""The one wording of a refusal the model sees, whichever path refused the call."""

from __future__ import annotations

BLOCKED_MARKER = "BLOCKED:"
"""Every refusal the model sees starts with this marker."""


def blocked(rule: str, reason: str, target: str = "") -> str:
    """The tool result for a refused call: the marker, the rule that refused it, the reason,
    the target when there is one, and an instruction not to retry.

    :param rule: a short identifier of what refused it (``"recursive-delete-root"``,
        ``"user-denied"``, ``"plugin:acme-guard"``, ``"workspace-write"``...).
    :param reason: one line saying why, written for the model.
    :param target: what the call would have touched (a command, a path), when useful.
    """
    text = f"{BLOCKED_MARKER} {reason.strip().rstrip('.')} (rule {rule})."
    if target:
        text += f" Target: {target}."
    return text + " Do not retry this call or a variant of it; ask the user, or do something else."


def is_blocked(text: str) -> bool:
    """Whether a tool result is a refusal produced by :func:`blocked`."""
    return text.startswith(BLOCKED_MARKER)


__all__ = ["BLOCKED_MARKER", "blocked"]
