"""Anthropic SDK exceptions as hermes :class:`ProviderError` s.

The SDK is passed in (``sdk``: the imported ``anthropic`` module) rather than imported here, so
importing this module stays free.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import (
    AuthenticationError,
    Cancelled,
    ContextOverflowError,
    ProviderError,
    RateLimitError,
)

PROVIDER = "anthropic"

_OVERFLOW_PHRASES = (
    "prompt is too long",
    "exceed context limit",
    "exceeds the context window",
    "context window",
    "too many tokens",
)
_BILLING_PHRASES = ("credit balance", "billing", "quota")


def one_line(text: Any, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000)
    except (TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    parsed = email.utils.parsedate_tz(str(value))
    if parsed is None:
        return None
    return max(0.0, email.utils.mktime_tz(parsed) - time.time())


def status_fields(body: Any, fallback: str) -> tuple[str | None, str]:
    """(error type, server message) of an error answer's ``body`` (its JSON value, or its text):
    the ``error`` object's ``type`` and ``message``, else the text, else ``fallback`` (the
    SDK's message for the error)."""
    error = body.get("error") if isinstance(body, Mapping) else None
    error = error if isinstance(error, Mapping) else {}
    err_type = error.get("type")
    message = error.get("message")
    if not message:
        message = body if isinstance(body, str) and body else fallback
    return (str(err_type) if err_type else None), one_line(message)


def status_message(status: int | None, body: Any) -> str:
    """The message of an error answer whose body holds none: its text, else its status and
    body (the same whichever HTTP client read it, so it never follows an SDK's wording)."""
    if isinstance(body, str):
        return body.strip() or f"Error code: {status}"
    return f"Error code: {status}" if body is None else f"Error code: {status} - {body}"


def _error_fields(exc: Any) -> tuple[str | None, str]:
    """(error type, server message) of an SDK status error."""
    body = getattr(exc, "body", None)
    err_type, message = status_fields(body, status_message(getattr(exc, "status_code", None), body))
    return (str(exc.type) if getattr(exc, "type", None) else err_type), (
        one_line(exc.api_message) if getattr(exc, "api_message", None) else message
    )


def from_status(
    status: int | None,
    err_type: str | None,
    message: str,
    *,
    retry_after_s: float | None = None,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """The hermes error for an HTTP ``status`` (or an in-stream ``error`` event's type) and
    the answer's ``headers`` (kept on the error for the credential pool)."""
    label = f"HTTP {status}" if status and status != 200 else "stream error"
    text = f"{label}{f' ({err_type})' if err_type else ''}: {message}"
    lowered = message.lower()
    kw: dict[str, Any] = {
        "status": status if status != 200 else None,
        "provider": PROVIDER,
        "headers": headers,
    }
    if status == 429 or err_type == "rate_limit_error":
        return RateLimitError(text, retry_after=retry_after_s, **kw)
    if status in (529, 503) or err_type == "overloaded_error":
        return ProviderError(text, kind="overloaded", retry_after=retry_after_s, **kw)
    if status in (401, 403) or err_type in ("authentication_error", "permission_error"):
        return AuthenticationError(text, **kw)
    if status == 402 or err_type == "billing_error" or any(p in lowered for p in _BILLING_PHRASES):
        return ProviderError(text, kind="billing", **kw)
    if status == 404 or err_type == "not_found_error":
        return ProviderError(text, kind="model_not_found", **kw)
    if status == 413 or err_type == "request_too_large":
        return ContextOverflowError(text, **kw)
    if status == 408 or err_type == "timeout_error":
        return ProviderError(text, kind="timeout", retry_after=retry_after_s, **kw)
    if (status in (400, None, 200) or err_type == "invalid_request_error") and any(
        p in lowered for p in _OVERFLOW_PHRASES
    ):
        return ContextOverflowError(text, **kw)
    if (status is not None and status >= 500) or err_type == "api_error":
        return ProviderError(text, kind="server", retry_after=retry_after_s, **kw)
    if status is not None and 400 <= status < 500:
        return ProviderError(text, kind="bad_request", **kw)
    if status in (None, 200):  # an error event mid-stream of an unknown type: try again
        return ProviderError(text, kind="server", **kw)
    return ProviderError(text, kind="other", **kw)


def map_exception(exc: BaseException, sdk: Any) -> ProviderError:
    """The hermes error for anything the SDK (or the HTTP layer under it) raised."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(
            "request timed out before the model answered", kind="timeout", provider=PROVIDER
        )
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f": {one_line(cause)}" if cause and str(cause) else ""
        return ProviderError(f"connection failed{detail}", kind="connection", provider=PROVIDER)
    if isinstance(exc, sdk.APIStatusError):
        err_type, message = _error_fields(exc)
        response = getattr(exc, "response", None)
        return from_status(
            getattr(exc, "status_code", None),
            err_type,
            message,
            retry_after_s=retry_after(getattr(response, "headers", None)),
            headers=dict(getattr(response, "headers", None) or {}),
        )
    if isinstance(exc, sdk.APIResponseValidationError):
        return ProviderError(
            f"unexpected response from the API: {one_line(exc)}", kind="server", provider=PROVIDER
        )
    if isinstance(exc, sdk.AnthropicError):
        # credentials that cannot be resolved and similar client-side problems
        name = type(exc).__name__
        if "Credential" in name or "auth" in str(exc).lower():
            return AuthenticationError(
                f"{one_line(exc)} (set ANTHROPIC_API_KEY or run `hermes setup`)", provider=PROVIDER
            )
        return ProviderError(f"{name}: {one_line(exc)}", kind="other", provider=PROVIDER)
    return stream_failure(exc)


def stream_failure(exc: BaseException) -> ProviderError:
    """A low-level failure while reading a response (reset, truncated, timed out): retryable."""
    name = type(exc).__name__
    kind = "timeout" if "timeout" in name.lower() else "connection"
    detail = one_line(exc) or name
    return ProviderError(
        f"the response stream broke ({name}: {detail})"
        if detail != name
        else f"the response stream broke ({name})",
        kind=kind,
        provider=PROVIDER,
    )


def cancelled() -> Cancelled:
    """What a cancelled call raises (``request.cancel`` was set): nothing of it is kept."""
    return Cancelled(f"{PROVIDER}: the model call was cancelled")
