"""What is Anthropic's in model calls sent over the process's own kept-alive connections.

A call is a ``POST {base}/v1/messages`` through :class:`hermes_runtime.http_json.JsonPoster`
(a ``urllib3`` connection pool per endpoint, through the proxy the environment names) instead
of the ``anthropic`` SDK's client, which a one-shot command would have to import (the larger
part of its start-up) and whose connection pool costs a busy gateway several times the CPU per
request. This module holds what the SDK would do for it: its headers (user agent, platform,
``anthropic-version``, the API key), which endpoints and credentials are served that way
(:func:`direct_endpoint`, :func:`direct_key`: the SDK serves the rest), the stream's events as
the SDK yields them, and failures turned into the same hermes errors as the SDK's.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import platform
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import ProviderError
from hermes_runtime import http_json
from hermes_runtime.http_json import Endpoint

from .errors import (
    PROVIDER,
    from_status,
    one_line,
    retry_after,
    status_fields,
    status_message,
    stream_failure,
)

SDK_SWITCH = "HERMES_ANTHROPIC_HTTP"
"""The environment variable that, set to ``sdk``, sends every request through the SDK's own
HTTP client."""

MESSAGES_PATH = "/v1/messages"

NO_KEY = "no-key-needed"
"""Sent as the key to a local server when none is configured (the SDK insists on one)."""

_CREDENTIAL_SOURCES = (
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_CONFIG_DIR",
    "ANTHROPIC_FEDERATION_RULE_ID",
    "ANTHROPIC_ORGANIZATION_ID",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
)
"""Variables from which the SDK finds credentials of other kinds than an API key (tokens,
profiles, federation): a client without a key then goes through the SDK."""
_SDK_HEADER_VARIABLES = ("ANTHROPIC_CUSTOM_HEADERS",)
"""Variables that add headers to the SDK's requests: set, the SDK sends the requests."""


def direct_endpoint(sdk_base_url: str) -> Endpoint | None:
    """The endpoint of the SDK's ``base_url`` when requests to it are sent over the process's
    own connections: a plain URL, straight or through an HTTP proxy
    (:func:`hermes_runtime.http_json.direct_endpoint`), an installed SDK whose headers this
    module knows (version 2.16 or later), no :data:`SDK_SWITCH` and no variable that changes the
    SDK's headers; else ``None``: the SDK serves it."""
    if any(os.environ.get(name) for name in _SDK_HEADER_VARIABLES):
        return None
    if _sdk_facts() is None:
        return None
    return http_json.direct_endpoint(sdk_base_url, SDK_SWITCH)


def direct_key(api_key: str | None) -> str | None:
    """The API key the SDK's client would send for a configured ``api_key``: that key, else
    ``ANTHROPIC_API_KEY``, else (no credentials of any kind: a server on this machine)
    :data:`NO_KEY`. ``None`` where the SDK would look for other credentials (a token, a
    profile, federation): the SDK serves those."""
    if api_key:
        return api_key
    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        return key
    if any(os.environ.get(name) for name in _CREDENTIAL_SOURCES) or _config_dir().exists():
        return None
    return NO_KEY


def _config_dir() -> Path:
    """Where the SDK looks for credential profiles when no variable names one."""
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        return (Path(appdata) if appdata else Path.home() / "AppData" / "Roaming") / "Anthropic"
    return Path.home() / ".config" / "anthropic"


@functools.cache
def _sdk_facts() -> tuple[str, str] | None:
    """(version, API version) of the installed SDK, read from its files without importing it;
    ``None`` when it is missing or older than 2.16, the first whose headers (the key as a
    bearer token) were checked against this module's."""
    from importlib.metadata import PackageNotFoundError, version
    from importlib.util import find_spec

    try:
        sdk_version = version("anthropic")
        spec = find_spec("anthropic")
    except (PackageNotFoundError, ImportError, ValueError):
        return None
    release = re.match(r"(\d+)\.(\d+)", sdk_version)
    if release is None or (int(release[1]), int(release[2])) < (2, 16):
        return None
    if spec is None or not spec.origin:
        return None
    try:
        constants = (Path(spec.origin).parent / "_constants.py").read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(r'^ANTHROPIC_API_VERSION\s*=\s*"([^"]+)"', constants, re.MULTILINE)
    return (sdk_version, found.group(1)) if found else None


def sdk_headers(api_key: str) -> dict[str, str]:
    """The headers the ``anthropic`` SDK's client (version 2.16 or later) sends with a JSON POST
    for ``api_key``, without importing it."""
    facts = _sdk_facts()
    if facts is None:
        raise ProviderError(
            "the installed anthropic SDK is not one whose headers are known",
            kind="other",
            provider=PROVIDER,
        )
    sdk_version, api_version = facts
    return {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": f"Anthropic/Python {sdk_version}",
        "X-Stainless-Lang": "python",
        "X-Stainless-Package-Version": sdk_version,
        "X-Stainless-OS": _os_name(),
        "X-Stainless-Arch": _architecture(),
        "X-Stainless-Runtime": platform.python_implementation(),
        "X-Stainless-Runtime-Version": platform.python_version(),
        "Authorization": f"Bearer {api_key}",
        "X-Stainless-Async": "false",
        "anthropic-version": api_version,
    }


def _os_name() -> str:
    system, machine = platform.system().lower(), platform.machine().lower()
    release = platform.release().lower()
    if system in ("ios", "ipados") or machine.startswith(("iphone", "ipad")):
        return "iOS"
    names = {"darwin": "MacOS", "windows": "Windows", "linux": "Linux", "freebsd": "FreeBSD"}
    if system == "android" or hasattr(sys, "getandroidapilevel") or "android" in release:
        return "Android"
    if system in names:
        return names[system]
    if system == "openbsd":
        return "OpenBSD"
    return f"Other:{system}" if system else "Unknown"


def _architecture() -> str:
    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return "arm64"
    if machine in ("arm", "x86_64"):
        return {"arm": "arm", "x86_64": "x64"}[machine]
    if sys.maxsize <= 2**32:
        return "x32"
    return f"other:{machine}" if machine else "unknown"


class AnthropicFailures:
    """The hermes errors of failed POSTs, as :func:`errors.map_exception` gives them for the
    SDK's."""

    def status(self, status: int, body: Any, headers: Mapping[str, str]) -> BaseException:
        """The error of an answer with a failing ``status`` (``body`` as the SDK reads it)."""
        if isinstance(body, str):
            body = body.strip()
        err_type, message = status_fields(body, status_message(status, body))
        return from_status(
            status,
            err_type,
            message,
            retry_after_s=retry_after(headers),
            headers={str(k): str(v) for k, v in (headers or {}).items()},
        )

    def network(self, exc: OSError | http.client.HTTPException, streaming: bool) -> BaseException:
        """The error of a failure to talk to the server; while streaming, a broken stream."""
        if streaming:
            return stream_failure(exc)
        if isinstance(exc, TimeoutError):
            return ProviderError(
                "request timed out before the model answered", kind="timeout", provider=PROVIDER
            )
        detail = f": {one_line(exc)}" if str(exc) else f": {type(exc).__name__}"
        return ProviderError(f"connection failed{detail}", kind="connection", provider=PROVIDER)

    def not_json(self, text: str) -> BaseException:
        """The error of a successful answer that is not JSON."""
        return ProviderError(
            f"unexpected response from the API: {one_line(text[:200])}",
            kind="server",
            provider=PROVIDER,
        )


def new_poster(
    endpoint: Endpoint, api_key: str, timeout: float | None, tls: Any = None
) -> http_json.JsonPoster:
    """A poster to ``endpoint`` with the SDK's headers for ``api_key``."""
    return http_json.JsonPoster(endpoint, sdk_headers(api_key), timeout, AnthropicFailures(), tls)


def stream_events(stream: http_json.EventStream) -> Iterator[Any]:
    """The JSON value of each event of a streamed answer, as the SDK's stream yields them:
    ``ping`` and unnamed events skipped, an ``error`` event raised as the SDK's status error is
    mapped, events without data skipped."""
    for event in stream:
        name = event.event
        if name is None or name == "ping":
            continue
        if name == "error":
            body: Any = event.data or ""
            try:
                body = json.loads(body)
                fallback = f"{body}"
            except ValueError:
                fallback = event.data or f"Error code: {stream.answer.status}"
            err_type, message = status_fields(body, fallback)
            raise from_status(
                stream.answer.status,
                err_type,
                message,
                retry_after_s=retry_after(stream.answer.headers),
            )
        if not event.data:
            continue
        yield json.loads(event.data)
