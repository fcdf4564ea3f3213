"""The process's shared verifying TLS context (hermes_runtime.tls): made once, verification as
strict as the default one, trusting what the SDKs' HTTP layer trusts."""

from __future__ import annotations

import http.client
import http.server
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import certifi
import pytest

from hermes_runtime.tls import (
    default_context_maker,
    process_context,
    read_trust_now,
    shared_context,
    verifying_context,
)

pytestmark = pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="OpenSSL paths")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private CA and a server certificate it signed for 127.0.0.1."""
    folder = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.pem", "-days", "2", "-subj", "/CN=hermes test CA", cwd=folder)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
             "server.csr", "-subj", "/CN=127.0.0.1", cwd=folder)  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext",
             cwd=folder)  # fmt: skip
    return folder


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def _serve(tls: ssl.SSLContext | None) -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def https_port(certificates: Path) -> Iterator[int]:
    """A TLS server on 127.0.0.1 whose certificate the private CA signed."""
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certificates / "server.pem", certificates / "server.key")
    yield from _serve(tls)


@pytest.fixture
def http_port() -> Iterator[int]:
    """A plain HTTP server on 127.0.0.1."""
    yield from _serve(None)


def _get(port: int, context: ssl.SSLContext | None) -> bytes:
    if context is None:
        connection: http.client.HTTPConnection = http.client.HTTPConnection("127.0.0.1", port)
    else:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        connection.request("GET", "/")
        return connection.getresponse().read()
    finally:
        connection.close()


def test_a_certificate_signed_by_a_trusted_ca_is_accepted(
    certificates: Path, https_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates / "ca.pem"))
    assert _get(https_port, verifying_context()) == b"hello"


def test_a_certificate_of_an_unknown_ca_is_refused(
    https_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(ssl.SSLCertVerificationError):
        _get(https_port, verifying_context())


def test_a_certificate_file_named_in_the_environment_is_trusted_alone(
    certificates: Path, https_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server's CA sits in a certificate folder named too, but SSL_CERT_FILE wins alone, as
    # it does for the SDKs' own default context: naming one file never widens what is trusted.
    other = tmp_path / "other"
    other.mkdir()
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out",
             "other.pem", "-days", "2", "-subj", "/CN=another CA", cwd=other)  # fmt: skip
    folder = tmp_path / "certs"
    folder.mkdir()
    (folder / "ca.pem").write_bytes((certificates / "ca.pem").read_bytes())
    _openssl("rehash", str(folder), cwd=folder)
    monkeypatch.setenv("SSL_CERT_DIR", str(folder))
    monkeypatch.setenv("SSL_CERT_FILE", str(other / "other.pem"))
    with pytest.raises(ssl.SSLCertVerificationError):
        _get(https_port, verifying_context())
    monkeypatch.delenv("SSL_CERT_FILE")
    assert _get(https_port, verifying_context()) == b"hello"  # the folder alone: trusted
    httpx2 = pytest.importorskip("httpx2")
    with pytest.raises(ssl.SSLCertVerificationError):  # the SDKs' HTTP layer agrees
        monkeypatch.setenv("SSL_CERT_FILE", str(other / "other.pem"))
        _get(https_port, httpx2.create_ssl_context())


def test_host_names_and_certificates_are_checked_as_by_the_default_context() -> None:
    context, default = verifying_context(), ssl.create_default_context()
    assert context.verify_mode == default.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname and default.check_hostname
    assert context.minimum_version == default.minimum_version


def test_the_system_bundle_is_trusted_as_by_the_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    httpx2 = pytest.importorskip("httpx2")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    ours = verifying_context().cert_store_stats()
    assert ours == httpx2.create_ssl_context().cert_store_stats()


def test_a_context_is_made_once_and_shared() -> None:
    make = default_context_maker()
    first = shared_context(make)
    assert isinstance(first, ssl.SSLContext)
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
    assert shared_context(make) is first


def test_a_changed_certificate_file_makes_a_new_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make = default_context_maker()
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    first = shared_context(make)
    assert shared_context(make) is first
    assert len(first.get_ca_certs()) > 1
    one = Path(certifi.where()).read_text(encoding="ascii").split("-----END CERTIFICATE-----")[0]
    bundle.write_text(one + "-----END CERTIFICATE-----\n", encoding="ascii")
    second = shared_context(make)
    assert second is not first
    assert len(second.get_ca_certs()) == 1
    monkeypatch.delenv("SSL_CERT_FILE")
    assert shared_context(make) is not second


def test_trust_read_ahead_is_that_of_the_shared_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    read_trust_now()
    context = shared_context(default_context_maker())
    assert process_context() is context
    assert context.cert_store_stats() == verifying_context().cert_store_stats()
