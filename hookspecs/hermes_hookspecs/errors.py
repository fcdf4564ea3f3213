"""Exceptions shared by the core and plugins."""

from __future__ import annotations


class HermesError(Exception):
    """Base class of every error hermes raises on purpose; its message is one readable line."""


class ToolError(HermesError):
    """Raised by a tool handler to report a failure to the model without a stack trace.

    The message is sent to the model verbatim as the tool result (marked as an error).
    """


class ToolCancelled(HermesError):
    """Raised by a tool handler (or the host) when the call was cancelled by an interrupt."""


class EnvironmentUnavailable(HermesError):
    """The configured execution environment cannot be created or reached.

    The message says what failed and how to fix it; the host never falls back to another backend.
    """


class ProviderError(HermesError):
    """A model call failed.

    :param message: one readable line.
    :param status: the HTTP status, when there was one.
    :param retryable: whether the same request may succeed if sent again (rate limits, 5xx,
        broken streams). The host decides how many times to retry.
    :param provider: the provider's name, filled in by the host when missing.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        provider: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.provider = provider


class AuthenticationError(ProviderError):
    """The provider rejected the credentials (401/403) or none were configured."""


class RateLimitError(ProviderError):
    """The provider asked us to slow down (429)."""

    def __init__(self, message: str, **kwargs: object) -> None:
        kwargs.setdefault("retryable", True)
        super().__init__(message, **kwargs)  # type: ignore[arg-type]


class ContextOverflowError(ProviderError):
    """The request did not fit in the model's context window."""
