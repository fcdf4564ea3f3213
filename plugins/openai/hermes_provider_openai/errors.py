"""Turning ``openai`` SDK exceptions (and error bodies met inside streams) into hermes errors.

:func:`classify` is the pure part (status, message, headers -> error); :func:`from_sdk` reads an
SDK exception and hands it to :func:`classify`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import (
    AuthenticationError,
    ContextOverflowError,
    ProviderError,
    RateLimitError,
)

_OVERFLOW = re.compile(
    r"context[ _-]?length|maximum context|context window|too many tokens|prompt is too long"
    r"|input is too long|reduce the length|exceeds? the (?:model'?s? )?(?:context|max)",
    re.IGNORECASE,
)
_BILLING_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "quota_exceeded"})
_MAX_MESSAGE = 400


def one_line(text: Any, limit: int = _MAX_MESSAGE) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _header(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    value = headers.get(name)
    if value is None and isinstance(headers, Mapping):
        for key, item in headers.items():
            if str(key).lower() == name:
                return str(item)
    return None if value is None else str(value)


def _plain_headers(headers: Any) -> dict[str, str]:
    """``headers`` as a plain dict (an SDK's, a mapping, or ``None``)."""
    try:
        return {str(k): str(v) for k, v in (headers or {}).items()}
    except (AttributeError, TypeError):
        return {}


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    millis = _header(headers, "retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = _header(headers, "retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def classify(
    status: int | None,
    message: str,
    *,
    headers: Any = None,
    code: str | None = None,
    provider: str | None = None,
    in_stream: bool = False,
) -> ProviderError:
    """The hermes error for an HTTP ``status`` and the server's ``message`` (and error ``code``).

    With ``in_stream`` the status was inferred from an error met inside a stream: it picks the
    class but is neither reported nor stored.
    """
    text = one_line(message) or "no error message"
    code_text = str(code or "")
    if in_stream:
        line = f"error in the stream: {text}"
    else:
        line = f"HTTP {status}: {text}" if status else text
    if code_text and code_text not in text:
        line += f" ({code_text})"
    wait = retry_after(headers)
    common: dict[str, Any] = {
        "status": None if in_stream else status,
        "retry_after": wait,
        "provider": provider,
        "headers": _plain_headers(headers),
    }
    if code_text in _BILLING_CODES or status == 402:
        return ProviderError(line, kind="billing", **common)
    if status == 429:
        return RateLimitError(line, **common)
    if status in (401, 403):
        return AuthenticationError(line, **common)
    if status == 404:
        return ProviderError(line, kind="model_not_found", **common)
    if status == 408:
        return ProviderError(line, kind="timeout", **common)
    if status in (503, 529):
        return ProviderError(line, kind="overloaded", **common)
    if status is not None and status >= 500:
        return ProviderError(line, kind="server", **common)
    if code_text == "context_length_exceeded" or (
        status in (400, 413, None) and _OVERFLOW.search(text)
    ):
        return ContextOverflowError(line, **common)
    if status is not None and 400 <= status < 500:
        return ProviderError(line, kind="bad_request", **common)
    return ProviderError(line, kind="other", **common)


def body_message(body: Any, fallback: str) -> tuple[str, str | None]:
    """The server's message and error code from an error body (the SDK unwraps ``error``)."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            body = inner
        message = body.get("message") or body.get("detail") or body.get("error")
        code = body.get("code") or body.get("type")
        return (str(message) if message else fallback), (str(code) if code else None)
    if isinstance(body, str) and body.strip():
        return body, None
    return fallback, None


def from_body(
    body: Any, *, fallback: str = "the model stream reported an error", provider: str | None = None
) -> ProviderError:
    """The hermes error for an error object met inside a stream (no HTTP status of its own).

    A numeric ``code`` is taken as the status (OpenRouter sends upstream statuses that way);
    well-known codes (rate limits, overload, quota, context length) are recognised; anything
    else counts as a server failure, which is worth retrying.
    """
    message, code = body_message(body, fallback)
    lowered = (code or "").lower()
    if lowered.isdigit():
        return classify(int(lowered), message, provider=provider)
    status: int | None = None
    if "rate_limit" in lowered:
        status = 429
    elif "overloaded" in lowered or "unavailable" in lowered:
        status = 503
    elif "invalid_request" in lowered or "invalid_prompt" in lowered:
        status = 400
    elif not (
        lowered in _BILLING_CODES
        or lowered == "context_length_exceeded"
        or _OVERFLOW.search(message)
    ):
        status = 500
    return classify(status, message, code=code, provider=provider, in_stream=True)


def from_sdk(exc: BaseException, *, provider: str | None = None) -> ProviderError:
    """The hermes error for an exception raised by the ``openai`` SDK."""
    if isinstance(exc, ProviderError):
        return exc
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return ProviderError(
            "the request timed out (no answer within the configured timeout)",
            kind="timeout",
            provider=provider,
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = one_line(cause) if cause is not None and str(cause) else exc.message
        return ProviderError(
            f"connection error: {detail or type(cause).__name__}",
            kind="connection",
            provider=provider,
        )
    if isinstance(exc, openai.APIStatusError):
        fallback = exc.message or f"Error code: {exc.status_code}"
        message, code = body_message(exc.body, fallback)
        return classify(
            exc.status_code,
            message,
            headers=exc.response.headers,
            code=code,
            provider=provider,
        )
    if isinstance(exc, openai.APIResponseValidationError):
        return ProviderError(
            f"HTTP {exc.status_code}: the response did not have the expected shape",
            status=exc.status_code,
            kind="other",
            provider=provider,
        )
    if isinstance(exc, openai.APIError):  # an error event inside a stream
        return from_body(exc.body, fallback=exc.message, provider=provider)
    return ProviderError(f"{type(exc).__name__}: {one_line(exc)}", kind="other", provider=provider)
