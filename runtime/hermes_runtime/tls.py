"""The process's TLS context for verifying servers, made once and shared.

Making a verifying context reads the system's certificate bundle (tens of milliseconds of
parsing), and every HTTP client would make its own. The context made here is shared by the
process's connection pools (:mod:`.http_pool`) and the SDKs' clients, and a child forked from
a resident process inherits it. It is made when a first ``https`` connection needs it (a
one-shot command whose model is a plain ``http`` server on this machine never reads the
bundle), and made anew when what it was made from changes: the ``SSL_CERT_FILE`` and
``SSL_CERT_DIR`` variables, or the default certificate file or folder.

It trusts what the SDKs' own default context trusts (:func:`trust_locations`): a custom CA
bundle named by ``SSL_CERT_FILE`` (or a folder by ``SSL_CERT_DIR``) alone, else the system's.
"""

from __future__ import annotations

import os
import ssl
import sys
import threading
from collections.abc import Callable
from typing import Any

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


BUNDLE_CANDIDATES = (
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/cert.pem",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/ca-bundle.pem",
)
"""The certificate bundles of the common Linux distributions, tried when the interpreter's
OpenSSL was built with paths this system does not have (as relocatable Python builds are)."""


def trust_locations() -> tuple[str | None, str | None, bool]:
    """Where the SDKs' HTTP layer reads the certificates it trusts on this system, as
    ``(cafile, capath, from_environment)``: ``SSL_CERT_FILE`` alone, else ``SSL_CERT_DIR``
    alone, else OpenSSL's built-in file and folder, else the first bundle of
    :data:`BUNDLE_CANDIDATES` that exists."""
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return cafile, None, True
    if capath := os.environ.get("SSL_CERT_DIR"):
        return None, capath, True
    paths = ssl.get_default_verify_paths()
    cafile = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    capath = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    if capath and not cafile and not any(_is_hashed_name(n) for n in os.listdir(capath)):
        capath = None  # a folder with no hashed certificate names holds nothing OpenSSL reads
    if not cafile and not capath:
        cafile = next(filter(os.path.isfile, BUNDLE_CANDIDATES), None)
    return cafile, capath, False


def _is_hashed_name(name: str) -> bool:
    stem, _, number = name.partition(".")
    return len(stem) == 8 and number.isdigit() and all(c in "0123456789abcdefABCDEF" for c in stem)


def verifying_context() -> ssl.SSLContext:
    """A client TLS context (certificates required, host names checked) that trusts what the
    SDKs' own default context trusts (:func:`trust_locations`), read now."""
    cafile, capath, from_environment = trust_locations()
    if from_environment:
        # what the SDKs' HTTP layer makes for SSL_CERT_FILE or SSL_CERT_DIR
        return ssl.create_default_context(cafile=cafile, capath=capath)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cafile or capath:
        context.load_verify_locations(cafile, capath)
    return context


def default_context_maker() -> Callable[[], ssl.SSLContext]:
    """The function that makes an SDK's default verifying context: :func:`verifying_context`
    where the SDKs read OpenSSL's certificate paths; on Windows
    and macOS, where they read the system's trust store, that of ``httpx2`` when it is installed
    (the SDKs that use it), else of ``httpx``."""
    if sys.platform not in ("win32", "darwin"):
        return verifying_context
    try:
        import httpx2

        return httpx2.create_ssl_context
    except ImportError:
        import httpx

        return httpx.create_ssl_context


def process_context() -> ssl.SSLContext:
    """The process's verifying context, shared by every client: made once by
    :func:`default_context_maker`'s function."""
    return shared_context(default_context_maker())


def read_trust_now() -> None:
    """Make the shared context now, reading its trusted certificates: a process that forks
    children to serve calls does it once for all of them."""
    process_context()
