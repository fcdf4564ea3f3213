"""Serving an aiohttp application on a host and port, for the adapters that listen; in a worker
process, on the listening socket the supervisor opened for that address (see
:mod:`hermes_gateway.workers`)."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import HermesError

_shared: dict[tuple[str, int], socket.socket] = {}


def share(sockets: Mapping[tuple[str, int], socket.socket]) -> None:
    """Listen on these open sockets instead of binding their ``(host, port)`` again (in a
    worker process: the supervisor's sockets, shared by every worker)."""
    _shared.clear()
    _shared.update(sockets)


def open_listener(host: str, port: int, what: str) -> socket.socket:
    """A socket bound to ``host``:``port`` (a free port for 0) and listening.

    :raises HermesError: one line naming ``what`` when the address cannot be listened on.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise HermesError(f"{what} cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise HermesError(f"{what} cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


async def listen(app: Any, host: str, port: int, what: str) -> tuple[Any, int]:
    """Serve ``app`` (an ``aiohttp.web.Application``) on ``host``:``port``; return its
    ``AppRunner`` (``cleanup()`` stops it) and the bound port, a free one when ``port`` is 0.

    :raises HermesError: one line naming ``what`` when the address cannot be listened on.
    """
    from aiohttp import web

    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    shared = _shared.get((host, port))
    site: web.BaseSite
    if shared is not None:
        site = web.SockSite(runner, shared)
    else:
        site = web.TCPSite(runner, host, port, reuse_address=True)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise HermesError(f"{what} cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    if shared is not None:
        return runner, int(shared.getsockname()[1])
    server = site._server  # the bound socket: the only way aiohttp tells a port it chose
    sockets = getattr(server, "sockets", None)  # asyncio's Server, or uvloop's
    if sockets:
        port = int(sockets[0].getsockname()[1])
    return runner, port
