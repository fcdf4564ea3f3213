"""The process's TLS contexts for verifying servers: one per way of making it, made once.

Making a verifying context reads the system's certificate bundle (tens of milliseconds of
parsing) and every HTTP client of an SDK makes its own. A context made here is shared by every
client that asks for the same one, and a child forked from a resident process inherits those
its parent made. A context is made anew when what it was made from changes: the
``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` variables, or the default certificate file or folder.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ssl

_CONTEXTS: dict[Callable[[], Any], tuple[Any, ssl.SSLContext]] = {}
_LOCK = threading.Lock()


def _stat(path: str | None) -> tuple[int, int, int] | None:
    if not path:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_size


def _sources() -> tuple[Any, ...]:
    """What a default verifying context is made from."""
    import ssl

    paths = ssl.get_default_verify_paths()
    return (
        os.environ.get("SSL_CERT_FILE"),
        os.environ.get("SSL_CERT_DIR"),
        _stat(os.environ.get("SSL_CERT_FILE")),
        _stat(os.environ.get("SSL_CERT_DIR")),
        _stat(paths.openssl_cafile),
        _stat(paths.openssl_capath),
    )


def shared_context(make: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """The context ``make()`` returns (an SDK's default verifying context), made once and
    shared until its sources change. Those who share it must not change it."""
    sources = _sources()
    with _LOCK:
        found = _CONTEXTS.get(make)
        if found is not None and found[0] == sources:
            return found[1]
        context = make()
        _CONTEXTS[make] = (sources, context)
        return context


def default_context_maker() -> Callable[[], ssl.SSLContext]:
    """The function that makes an SDK's default verifying context: that of ``httpx2`` when it
    is installed (the SDKs that use it), else of ``httpx``."""
    try:
        import httpx2

        return httpx2.create_ssl_context
    except ImportError:
        import httpx

        return httpx.create_ssl_context
