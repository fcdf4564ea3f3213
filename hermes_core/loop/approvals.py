"""Approval of dangerous actions: remembered decisions, plugins, the user, and failing closed."""

from __future__ import annotations

import threading
from collections.abc import Callable

from hermes_hookspecs import APPROVAL_DECISIONS, ApprovalRequest, ToolContext, blocked

from ..plugins.manager import PluginManager

ApprovalCallback = Callable[[ApprovalRequest], str | None]
"""Asks a person; returns a decision (``once``/``session``/``always``/``deny``) or ``None``."""

NO_APPROVER = "no one was available to approve it"
"""Who refused a request that nobody answered (security fails closed)."""

_FAILED = " failed ("


def refusal(request: ApprovalRequest, who: str) -> str:
    """The tool result for ``request`` when :meth:`ApprovalGate.decide` refused it; ``who`` is
    the decider it named. Made by :func:`hermes_hookspecs.blocked`, so it starts with
    ``BLOCKED:`` and names the rule: ``user-denied``, ``no-approver`` or ``plugin:NAME``."""
    need = request.reason.strip().rstrip(".") or "a dangerous action"
    if who == "user":
        rule, reason = "user-denied", f"not approved by the user: {need}"
    elif who.startswith("plugin ") and _FAILED in who:
        name, _, detail = who[len("plugin ") :].partition(_FAILED)
        rule = f"plugin:{name}"
        reason = (
            f"the approval plugin {name} failed ({detail.removesuffix(')')}), "
            f"so this is not approved: {need}"
        )
    elif who.startswith("plugin "):
        name = who[len("plugin ") :]
        rule, reason = f"plugin:{name}", f"not approved by the approval plugin {name}: {need}"
    else:
        rule, reason = "no-approver", f"not approved, as {NO_APPROVER}: {need}"
    return blocked(rule, reason, request.action)


class ApprovalGate:
    """Decides approval requests for one agent.

    Order: ``yolo`` approves everything; then decisions remembered for this session; then the
    ``hermes_approve`` hook (first answer wins); then the interactive callback; with none of
    these, the request is denied.

    A ``session`` or ``always`` decision is remembered under the asking tool and exactly the
    request's :attr:`~hermes_hookspecs.ApprovalRequest.cache_key`, never anything broader: a
    later request is approved by it only when both are the same. A ``once_only`` request (a
    command outside the sandbox) is never approved by ``yolo`` or a remembered decision, and
    its answer is not remembered.
    """

    def __init__(
        self,
        plugins: PluginManager,
        *,
        callback: ApprovalCallback | None = None,
        yolo: bool = False,
    ) -> None:
        self.plugins = plugins
        self.callback = callback
        self.yolo = yolo
        self._session_allowed: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Forget the session's remembered decisions (a new session started)."""
        with self._lock:
            self._session_allowed.clear()

    @staticmethod
    def _memory_key(request: ApprovalRequest) -> tuple[str, str]:
        return (request.tool, request.cache_key)

    def decide(self, request: ApprovalRequest, context: ToolContext) -> tuple[bool, str]:
        """Return whether ``request`` is approved, and who decided: ``yolo``, ``session``,
        ``user``, ``plugin NAME``, ``plugin NAME failed (...)`` or :data:`NO_APPROVER`."""
        if self.yolo and not request.once_only:
            return True, "yolo"
        remembered = self._memory_key(request)
        with self._lock:
            if remembered in self._session_allowed and not request.once_only:
                return True, "session"
        decision, who = None, ""
        # An approver that crashes denies: security fails closed, so no later plugin may overrule.
        answer = self.plugins.call_first(
            "hermes_approve", fail_closed=True, request=request, context=context
        )
        if answer is not None:
            if answer.error is not None:
                exc = answer.error
                return False, f"plugin {answer.record.name} failed ({type(exc).__name__}: {exc})"
            decision, who = answer.value, f"plugin {answer.record.name}"
        if decision is None and self.callback is not None:
            with self._lock:  # one prompt at a time, even when tools run in parallel
                decision, who = self.callback(request), "user"
        if decision not in APPROVAL_DECISIONS:
            return False, who or NO_APPROVER
        if decision in ("session", "always") and not request.once_only:
            with self._lock:
                self._session_allowed.add(remembered)
        return decision != "deny", who

    def approve(self, request: ApprovalRequest, context: ToolContext) -> bool:
        """Whether ``request`` is approved."""
        return self.decide(request, context)[0]
