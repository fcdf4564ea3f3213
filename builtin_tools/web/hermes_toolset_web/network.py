"""The network backend of the web tools' HTTP client: every TCP connection is checked by
:func:`hermes_toolset_web.guard.checked_addresses` first. Imported only when a page is fetched
(it needs httpcore)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import httpcore

from .guard import AllowList, Resolver, WebRefused, checked_addresses, resolve


class GuardedNetwork(httpcore.NetworkBackend):
    """An ``httpcore`` network backend that checks every address before it connects.

    :param allow: the exceptions of ``web.allow_private``.
    :param resolver: ``resolver(host, port)`` returns the host's addresses (tests give one).
    :param on_connect: called with ``(address, port)`` just before each connection is opened.
    """

    def __init__(
        self,
        allow: AllowList,
        resolver: Resolver = resolve,
        on_connect: Callable[[str, int], None] | None = None,
    ) -> None:
        self._inner = httpcore.SyncBackend()
        self._allow = allow
        self._resolver = resolver
        self._on_connect = on_connect

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        """Resolve ``host``, check every address, connect to the first that answers."""
        addresses = checked_addresses(host, port, self._allow, self._resolver)
        last: Exception | None = None
        for address in addresses:
            if self._on_connect is not None:
                self._on_connect(address, port)
            try:
                return self._inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except Exception as exc:  # noqa: BLE001 - try the next address, report the last
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        """Never: the web tools only speak TCP."""
        raise WebRefused("the web tools do not connect to unix sockets")

    def sleep(self, seconds: float) -> None:
        """Sleep, as the default backend does."""
        self._inner.sleep(seconds)
