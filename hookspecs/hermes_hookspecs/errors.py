"""Exceptions shared by the core and plugins."""

from __future__ import annotations

from collections.abc import Mapping


class HermesError(Exception):
    """Base class of every error hermes raises on purpose; its message is one readable line."""


class ToolError(HermesError):
    """Raised by a tool handler to report a failure to the model without a stack trace.

    The message is sent to the model verbatim as the tool result (marked as an error).
    """


class Cancelled(BaseException):
    """Work stopped because the user (or the host) interrupted it: a model call, a summary, a
    tool call. Nothing the work produced is kept.

    A provider's client raises it when ``ModelRequest.cancel`` is set during its call; the host
    raises it for an interrupt of a model call, a context summary or a tool call, and ends the
    turn as ``interrupted``. It is never a provider failure: it is not retried and never moves a
    turn to a fallback provider.

    Like :class:`asyncio.CancelledError` it derives from :class:`BaseException`, so that it passes
    through the ``except Exception`` an engine or a tool keeps for its own failures (an
    interrupted summary must not be taken for a failed one). Catch it by name.
    """


class ToolCancelled(HermesError, Cancelled):
    """Raised by a tool handler (or the host) when the call was cancelled by an interrupt.

    The tool call's kind of :class:`Cancelled`. It is also a :class:`HermesError` (so an
    :class:`Exception`), as it always was: handlers that catch it keep working.
    """


class EnvironmentUnavailable(HermesError):
    """The configured execution environment cannot be created or reached.

    The message says what failed and how to fix it; the host never falls back to another backend.
    """


# --- an environment refused by a security policy ---------------------------------------------


class EnvironmentRefused(EnvironmentUnavailable):
    """The configured execution environment is refused by a security policy (sandbox settings
    that would reach the host, an unknown or changed host key): not a failure that goes away
    when retried. The host reports it, when it escapes a tool handler, to the model as a
    refusal made by :func:`~hermes_hookspecs.blocked` with :attr:`rule`.

    :param message: one readable line: what was refused, why, and the setting that allows it.
    :param rule: a short identifier of the policy (``"docker-unsafe-settings"``).
    """

    def __init__(self, message: str, *, rule: str = "environment-policy") -> None:
        super().__init__(message)
        self.rule = rule


ERROR_KINDS: tuple[str, ...] = (
    "rate_limit",  # 429
    "billing",  # 402, quota exhausted
    "overloaded",  # 529, 503
    "server",  # other 5xx
    "timeout",  # 408, client-side timeouts
    "connection",  # refused, reset, dropped streams
    "auth",  # 401, 403
    "model_not_found",  # 404
    "context_overflow",  # 400 saying the prompt is too long
    "bad_request",  # other 4xx
    "other",
)
"""How provider errors are classified; the host's retry and fallback policy works on these."""

RETRYABLE_KINDS: frozenset[str] = frozenset(
    {"rate_limit", "overloaded", "server", "timeout", "connection"}
)


class ProviderError(HermesError):
    """A model call failed.

    :param message: one readable line.
    :param status: the HTTP status, when there was one.
    :param kind: one of :data:`ERROR_KINDS`.
    :param retryable: whether the same request may succeed if sent again; defaults from
        ``kind`` (rate limits, overload, 5xx, timeouts, dropped connections).
    :param retry_after: seconds the provider asked us to wait (``Retry-After``), if any.
    :param provider: the provider's name, filled in by the host when missing.
    :param headers: the answer's HTTP headers, names in lower case (rate-limit resets, for
        the credential pool's classification of the error); empty when unknown.
    :ivar key_id: the id of the pooled key whose request failed, set by the host ("" when the
        provider has no pool).
    """

    default_kind = "other"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        kind: str | None = None,
        retryable: bool | None = None,
        retry_after: float | None = None,
        provider: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.headers = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
        self.key_id = ""
        self.status = status
        self.kind = kind or self.default_kind
        self.retryable = self.kind in RETRYABLE_KINDS if retryable is None else retryable
        self.retry_after = retry_after
        self.provider = provider


class AuthenticationError(ProviderError):
    """The provider rejected the credentials (401/403) or none were configured."""

    default_kind = "auth"


class RateLimitError(ProviderError):
    """The provider asked us to slow down (429)."""

    default_kind = "rate_limit"


class ContextOverflowError(ProviderError):
    """The request did not fit in the model's context window."""

    default_kind = "context_overflow"


__all__ = [
    "ERROR_KINDS",
    "RETRYABLE_KINDS",
    "AuthenticationError",
    "Cancelled",
    "ContextOverflowError",
    "EnvironmentRefused",
    "EnvironmentUnavailable",
    "HermesError",
    "ProviderError",
    "RateLimitError",
    "ToolCancelled",
    "ToolError",
]
