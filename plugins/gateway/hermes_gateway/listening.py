"""Serving an aiohttp application on a host and port, for the adapters that listen."""

from __future__ import annotations

from typing import Any

from hermes_hookspecs import HermesError


async def listen(app: Any, host: str, port: int, what: str) -> tuple[Any, int]:
    """Serve ``app`` (an ``aiohttp.web.Application``) on ``host``:``port``; return its
    ``AppRunner`` (``cleanup()`` stops it) and the bound port, a free one when ``port`` is 0.

    :raises HermesError: one line naming ``what`` when the address cannot be listened on.
    """
    from aiohttp import web

    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise HermesError(f"{what} cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    server = site._server  # the bound socket: the only way aiohttp tells a port it chose
    sockets = getattr(server, "sockets", None)  # asyncio's Server, or uvloop's
    if sockets:
        port = int(sockets[0].getsockname()[1])
    return runner, port
