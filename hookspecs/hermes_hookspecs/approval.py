"""Approval of dangerous actions: the request a tool makes and the decisions that answer it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ApprovalDecision = Literal["once", "session", "always", "deny"]
"""How a request is answered.

``once`` allows this call only; ``session`` allows every request with the same ``key`` for the rest
of the session; ``always`` does the same and is remembered by an approval plugin that persists it;
``deny`` refuses.
"""

APPROVAL_DECISIONS: tuple[str, ...] = ("once", "session", "always", "deny")


@dataclass(frozen=True)
class ApprovalRequest:
    """A tool's request to do something that needs a human's consent.

    :param action: what will be done, e.g. the shell command to run.
    :param reason: why it needs approval, e.g. ``"recursive delete"``.
    :param key: groups requests for the ``session`` and ``always`` decisions (e.g. the pattern
        that matched); defaults to ``action``.
    :param tool: the name of the tool asking.
    :param details: anything else a UI may show.
    :param once_only: the request may be approved for this one call only (a command run outside
        the sandbox): ``session`` and ``always`` answers count as ``once``, nothing is
        remembered, and ``--yolo`` does not approve it; a person or an approval plugin must.
    """

    action: str
    reason: str
    key: str = ""
    tool: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    once_only: bool = False

    @property
    def cache_key(self) -> str:
        """The key decisions are remembered under."""
        return self.key or self.action


__all__ = ["APPROVAL_DECISIONS", "ApprovalDecision", "ApprovalRequest"]
