"""Anthropic SDK exceptions mapped to hermes errors, built as the SDK builds them."""

from __future__ import annotations

import email.utils
import time

import pytest
from hermes_provider_anthropic.errors import cancelled, map_exception, retry_after

from hermes_hookspecs import (
    AuthenticationError,
    Cancelled,
    ContextOverflowError,
    ProviderError,
    RateLimitError,
)

anthropic = pytest.importorskip("anthropic")
httpx = pytest.importorskip("anthropic._base_client").httpx2

URL = "http://127.0.0.1:9/v1/messages"


def status_error(status, err_type, message, headers=None):
    request = httpx.Request("POST", URL)
    body = {"type": "error", "error": {"type": err_type, "message": message}}
    response = httpx.Response(status, headers=headers or {}, json=body, request=request)
    from anthropic._error_classes import make_status_error

    return make_status_error(f"Error code: {status} - {body}", body=body, response=response)


def mapped(status, err_type, message, headers=None):
    return map_exception(status_error(status, err_type, message, headers), anthropic)


def test_rate_limit_with_retry_after():
    err = mapped(429, "rate_limit_error", "slow down", {"retry-after": "7"})
    assert isinstance(err, RateLimitError)
    assert err.kind == "rate_limit" and err.retryable and err.retry_after == 7.0
    assert err.status == 429
    assert str(err) == "HTTP 429 (rate_limit_error): slow down"


def test_retry_after_ms_and_dates():
    assert retry_after({"retry-after-ms": "1500"}) == 1.5
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after({"retry-after": future}) <= 31
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


def test_overloaded():
    err = mapped(529, "overloaded_error", "Overloaded")
    assert err.kind == "overloaded" and err.retryable and err.status == 529


@pytest.mark.parametrize("status", [500, 502, 504])
def test_server_errors(status):
    err = mapped(status, "api_error", "boom")
    assert err.kind == "server" and err.retryable


@pytest.mark.parametrize(
    "status, err_type", [(401, "authentication_error"), (403, "permission_error")]
)
def test_auth(status, err_type):
    err = mapped(status, err_type, "invalid x-api-key")
    assert isinstance(err, AuthenticationError)
    assert not err.retryable and err.status == status
    assert "invalid x-api-key" in str(err)


def test_model_not_found():
    err = mapped(404, "not_found_error", "model: claude-nope")
    assert err.kind == "model_not_found" and not err.retryable


@pytest.mark.parametrize(
    "status, err_type, message",
    [
        (402, "billing_error", "payment required"),
        (
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API.",
        ),
    ],
)
def test_billing(status, err_type, message):
    assert mapped(status, err_type, message).kind == "billing"


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 210000 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000",
    ],
)
def test_context_overflow(message):
    err = mapped(400, "invalid_request_error", message)
    assert isinstance(err, ContextOverflowError)
    assert err.kind == "context_overflow" and not err.retryable


def test_other_bad_request():
    err = mapped(400, "invalid_request_error", "messages: roles must alternate")
    assert err.kind == "bad_request" and not err.retryable
    assert str(err) == "HTTP 400 (invalid_request_error): messages: roles must alternate"


def test_mid_stream_error_event():
    # the SDK raises a status error with the stream's 200 status for an `error` event
    err = mapped(200, "overloaded_error", "Overloaded")
    assert err.kind == "overloaded" and err.retryable and err.status is None
    assert mapped(200, "api_error", "internal").kind == "server"


def test_timeout_and_connection():
    request = httpx.Request("POST", URL)
    timeout = map_exception(anthropic.APITimeoutError(request=request), anthropic)
    assert timeout.kind == "timeout" and timeout.retryable
    try:
        raise anthropic.APIConnectionError(request=request) from ConnectionResetError(
            "reset by peer"
        )
    except anthropic.APIConnectionError as exc:
        conn = map_exception(exc, anthropic)
    assert conn.kind == "connection" and conn.retryable
    assert "reset by peer" in str(conn)


def test_low_level_stream_failures_are_retryable():
    err = map_exception(httpx.RemoteProtocolError("peer closed connection"), anthropic)
    assert err.kind == "connection" and err.retryable
    err = map_exception(httpx.ReadTimeout("read timed out"), anthropic)
    assert err.kind == "timeout" and err.retryable


def test_messages_are_one_line():
    err = mapped(500, "api_error", "line one\nline two")
    assert "\n" not in str(err)


def test_cancelled_is_the_contracts_cancellation_not_a_provider_error():
    err = cancelled()
    assert isinstance(err, Cancelled) and not isinstance(err, ProviderError)
    assert str(err) == "anthropic: the model call was cancelled"
