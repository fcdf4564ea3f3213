"""Every SDK failure becomes a classified hermes error, built here from real SDK exceptions."""

from __future__ import annotations

import email.utils
import time

import httpx2
import openai
import pytest
from hermes_provider_openai.errors import classify, from_body, from_sdk, retry_after

from hermes_hookspecs import (
    AuthenticationError,
    ContextOverflowError,
    ProviderError,
    RateLimitError,
)

REQUEST = httpx2.Request("POST", "https://api.example.test/v1/chat/completions")


def status_error(status, message="something failed", headers=None, code=None):
    """An SDK status error as the SDK raises it: message ``Error code: N - ...`` and the body's
    ``error`` object as ``body``."""
    error = {"message": message, "type": "x", "param": None, "code": code}
    response = httpx2.Response(
        status, headers=headers or {}, json={"error": error}, request=REQUEST
    )
    return openai.APIStatusError(f"Error code: {status} - {message}", response=response, body=error)


@pytest.mark.parametrize(
    ("status", "cls", "kind", "retryable"),
    [
        (429, RateLimitError, "rate_limit", True),
        (402, ProviderError, "billing", False),
        (529, ProviderError, "overloaded", True),
        (503, ProviderError, "overloaded", True),
        (500, ProviderError, "server", True),
        (502, ProviderError, "server", True),
        (504, ProviderError, "server", True),
        (408, ProviderError, "timeout", True),
        (401, AuthenticationError, "auth", False),
        (403, AuthenticationError, "auth", False),
        (404, ProviderError, "model_not_found", False),
        (400, ProviderError, "bad_request", False),
        (409, ProviderError, "bad_request", False),
        (422, ProviderError, "bad_request", False),
    ],
)
def test_status_mapping(status, cls, kind, retryable):
    error = from_sdk(status_error(status, "the server's words"), provider="openai")
    assert type(error) is cls
    assert (error.kind, error.status, error.retryable) == (kind, status, retryable)
    assert str(error).startswith(f"HTTP {status}: the server's words")
    assert "\n" not in str(error)
    assert error.provider == "openai"


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 128000 tokens. However, your messages resulted"
        " in 130000 tokens.",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Too many tokens in the request",
        "Input exceeds the context window of this model",
        "Please reduce the length of the messages.",
    ],
)
def test_context_overflow(message):
    error = from_sdk(status_error(400, message))
    assert isinstance(error, ContextOverflowError)
    assert error.kind == "context_overflow" and not error.retryable


def test_context_overflow_by_code():
    error = from_sdk(status_error(400, "bad input", code="context_length_exceeded"))
    assert isinstance(error, ContextOverflowError)


def test_quota_429_is_billing():
    error = from_sdk(
        status_error(429, "You exceeded your current quota", code="insufficient_quota")
    )
    assert error.kind == "billing" and not error.retryable
    assert "insufficient_quota" in str(error)


def test_retry_after_seconds():
    error = from_sdk(status_error(429, "slow", headers={"Retry-After": "7"}))
    assert isinstance(error, RateLimitError) and error.retry_after == 7.0


def test_retry_after_ms_wins():
    error = from_sdk(
        status_error(429, "slow", headers={"retry-after-ms": "1500", "retry-after": "9"})
    )
    assert error.retry_after == 1.5


def test_retry_after_http_date():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after({"Retry-After": when}) <= 31


def test_retry_after_garbage_or_missing():
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None
    assert retry_after(None) is None


def test_retry_after_on_503():
    error = from_sdk(status_error(503, "busy", headers={"retry-after": "2"}))
    assert error.kind == "overloaded" and error.retry_after == 2.0


def test_non_json_error_body():
    text = "<html>Bad gateway\n</html>"
    response = httpx2.Response(502, text=text, request=REQUEST)
    error = from_sdk(openai.InternalServerError("Error code: 502", response=response, body=text))
    assert error.kind == "server" and error.status == 502
    assert "\n" not in str(error) and "Bad gateway" in str(error)


def test_long_messages_are_cut():
    error = from_sdk(status_error(400, "x" * 5000))
    assert len(str(error)) < 500


def test_timeout():
    error = from_sdk(openai.APITimeoutError(request=REQUEST))
    assert (error.kind, error.retryable, error.status) == ("timeout", True, None)


def test_connection_error_names_the_cause():
    try:
        try:
            raise httpx2.ConnectError("[Errno 111] Connection refused")
        except httpx2.ConnectError as cause:
            raise openai.APIConnectionError(request=REQUEST) from cause
    except openai.APIConnectionError as exc:
        error = from_sdk(exc)
    assert error.kind == "connection" and error.retryable
    assert "Connection refused" in str(error)


def test_error_event_inside_a_stream():
    exc = openai.APIError(
        "overloaded", REQUEST, body={"message": "overloaded", "type": "overloaded_error"}
    )
    error = from_sdk(exc)
    assert error.kind == "overloaded" and error.retryable and error.status is None


def test_unknown_sdk_error():
    error = from_sdk(openai.OpenAIError("weird"))
    assert error.kind == "other" and "weird" in str(error)


def test_hermes_errors_pass_through():
    original = RateLimitError("x")
    assert from_sdk(original) is original


@pytest.mark.parametrize(
    ("body", "kind", "status"),
    [
        ({"code": 502, "message": "upstream"}, "server", 502),
        ({"code": "429", "message": "upstream limit"}, "rate_limit", 429),
        ({"code": "rate_limit_exceeded", "message": "slow"}, "rate_limit", None),
        ({"code": "insufficient_quota", "message": "pay"}, "billing", None),
        ({"code": "context_length_exceeded", "message": "big"}, "context_overflow", None),
        ({"type": "invalid_request_error", "message": "bad"}, "bad_request", None),
        ({"message": "something broke"}, "server", None),
        ("plain text", "server", None),
        (None, "server", None),
    ],
)
def test_errors_inside_streams(body, kind, status):
    error = from_body(body)
    assert (error.kind, error.status) == (kind, status)


def test_classify_is_one_line():
    error = classify(500, "line one\nline two\n\n  line three")
    assert str(error) == "HTTP 500: line one line two line three"
