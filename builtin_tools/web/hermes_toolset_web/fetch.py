"""Fetching one URL for ``web_extract``: redirects followed and checked hop by hop, gzip and
brotli decoded, a size cap, a timeout, credentials never forwarded to another origin."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urljoin, urlsplit, urlunsplit

from hermes_hookspecs import ToolError

from .guard import AllowList, Resolver, check_url, redact_url, resolve

if TYPE_CHECKING:
    import httpx

USER_AGENT = "hermes-web/0.1 (+https://github.com/hermes-framework/hermes)"
MAX_REDIRECTS = 5
REDIRECT_CODES = (301, 302, 303, 307, 308)


@dataclass
class FetchSettings:
    """How ``web_extract`` fetches.

    :param allow: the exceptions of ``web.allow_private``.
    :param timeout: seconds for each connection, read and write, and for the whole fetch.
    :param max_bytes: the most bytes of a body that are read; the rest is left unread.
    :param resolver: the DNS resolver (tests give one).
    :param on_connect: called with ``(address, port)`` before each TCP connection.
    """

    allow: AllowList
    timeout: float = 20.0
    max_bytes: int = 10 * 1024 * 1024
    resolver: Resolver = resolve
    on_connect: Callable[[str, int], None] | None = None


@dataclass
class Fetched:
    """A fetched body.

    :param url: the URL asked for, redacted.
    :param final_url: the URL the body came from after redirects, redacted.
    :param status: the HTTP status.
    :param content_type: the media type, lower case, without parameters.
    :param charset: the ``charset`` parameter of ``Content-Type``, if any.
    :param body: the (decompressed) body, at most ``max_bytes``.
    :param truncated: the body was longer than ``max_bytes``.
    """

    url: str
    final_url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool


def _transport(settings: FetchSettings) -> httpx.BaseTransport:
    """An httpx transport whose every connection goes through :class:`GuardedNetwork`."""
    import ssl

    import certifi
    import httpcore
    import httpx

    from .network import GuardedNetwork

    class _Body(httpx.SyncByteStream):
        def __init__(self, stream: Any) -> None:
            self._stream = stream

        def __iter__(self) -> Iterator[bytes]:
            yield from self._stream

        def close(self) -> None:
            close = getattr(self._stream, "close", None)
            if close is not None:
                close()

    class _GuardedTransport(httpx.BaseTransport):
        def __init__(self) -> None:
            self._pool = httpcore.ConnectionPool(
                ssl_context=ssl.create_default_context(cafile=certifi.where()),
                network_backend=GuardedNetwork(
                    settings.allow, settings.resolver, settings.on_connect
                ),
                max_connections=4,
            )

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            assert isinstance(request.stream, httpx.SyncByteStream)
            core_request = httpcore.Request(
                method=request.method,
                url=httpcore.URL(
                    scheme=request.url.raw_scheme,
                    host=request.url.raw_host,
                    port=request.url.port,
                    target=request.url.raw_path,
                ),
                headers=request.headers.raw,
                content=request.stream,
                extensions=request.extensions,
            )
            try:
                response = self._pool.handle_request(core_request)
            except httpcore.TimeoutException as exc:
                raise httpx.TimeoutException(str(exc) or "timed out", request=request) from exc
            except httpcore.NetworkError as exc:
                raise httpx.ConnectError(str(exc) or "connection failed", request=request) from exc
            except httpcore.ProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=request) from exc
            return httpx.Response(
                status_code=response.status,
                headers=response.headers,
                stream=_Body(response.stream),
                extensions=response.extensions,
            )

        def close(self) -> None:
            self._pool.close()

    return _GuardedTransport()


def _without_userinfo(parts: SplitResult) -> str:
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port


def fetch(url: str, settings: FetchSettings) -> Fetched:
    """Fetch ``url``, following at most :data:`MAX_REDIRECTS` redirects, each checked again.

    :raises WebRefused: the URL, a redirect target or an address is refused (nothing connected).
    :raises ToolError: the fetch failed (HTTP error status, timeout, connection error), in one
        line naming the redacted URL.
    """
    import time

    import httpx

    check_url(url)
    shown = redact_url(url)
    deadline = time.monotonic() + settings.timeout
    timeout = httpx.Timeout(settings.timeout)
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "text/html,application/xhtml+xml,application/pdf,text/plain;q=0.9,*/*;q=0.5",
        "Accept-Encoding": "gzip, deflate",
    }
    with httpx.Client(
        transport=_transport(settings), timeout=timeout, trust_env=False, follow_redirects=False
    ) as client:
        current = url
        for _hop in range(MAX_REDIRECTS + 1):
            parts = check_url(current)
            auth: tuple[str, str] | None = None
            if parts.username is not None and _origin(current) == _origin(url):
                auth = (parts.username or "", parts.password or "")
            try:
                request = client.build_request("GET", _without_userinfo(parts), headers=headers)
                response = client.send(request, stream=True, auth=auth)
            except httpx.TimeoutException:
                raise ToolError(
                    f"timed out after {settings.timeout:g}s fetching {redact_url(current)}"
                ) from None
            except httpx.HTTPError as exc:
                raise ToolError(f"cannot fetch {redact_url(current)}: {_one_line(exc)}") from None
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_CODES and location:
                    current = urljoin(current, location)
                    continue
                if response.status_code >= 400:
                    raise ToolError(
                        f"{redact_url(current)} answered HTTP {response.status_code}"
                        f" {response.reason_phrase}".rstrip()
                    )
                body, truncated = _read(response, settings.max_bytes, deadline, current)
                media = response.headers.get("content-type", "")
                content_type = media.split(";")[0].strip().lower()
                charset = response.charset_encoding
                return Fetched(
                    url=shown,
                    final_url=redact_url(current),
                    status=response.status_code,
                    content_type=content_type,
                    charset=charset,
                    body=body,
                    truncated=truncated,
                )
            finally:
                response.close()
    raise ToolError(f"more than {MAX_REDIRECTS} redirects fetching {shown}")


def _read(response: httpx.Response, cap: int, deadline: float, url: str) -> tuple[bytes, bool]:
    import time

    import httpx

    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                return b"".join(chunks)[:cap], True
            if time.monotonic() > deadline:
                raise ToolError(f"timed out reading {redact_url(url)}")
    except httpx.TimeoutException:
        raise ToolError(f"timed out reading {redact_url(url)}") from None
    except httpx.DecodingError as exc:
        raise ToolError(f"cannot decode the body of {redact_url(url)}: {_one_line(exc)}") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"cannot read {redact_url(url)}: {_one_line(exc)}") from None
    return b"".join(chunks), False


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]
