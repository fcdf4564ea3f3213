"""Servers on 127.0.0.1 for the HTTP path's tests: a JSON echo server (plain or TLS), a test CA
that signs its certificate, and an HTTP proxy (``CONNECT`` tunnels and forwarded requests)."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import select
import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def make_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A test CA and a certificate it signs for 127.0.0.1: (ca.pem, server.pem, server.key),
    written to ``folder``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hermes test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


Answer = Callable[["Handler", dict[str, Any]], None]


class EchoServer(ThreadingHTTPServer):
    """Answers each POST with ``answer`` (by default its JSON body echoed); records each
    request's peer port, path, body and headers."""

    daemon_threads = True

    def __init__(self, answer: Answer | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.answer = answer or echo
        self.requests: list[tuple[int, str, dict[str, Any], dict[str, str]]] = []
        super().__init__(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self.server_address[1])

    def start(self) -> EchoServer:
        """Serve on a daemon thread."""
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.shutdown()
        self.server_close()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: EchoServer

    def do_POST(self) -> None:  # noqa: N802 - the standard library's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.client_address[1], self.path, body, dict(self.headers)))
        self.server.answer(self, body)

    def send_json(self, value: Any) -> None:
        """A 200 answer with ``value`` as JSON."""
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def echo(handler: Handler, body: dict[str, Any]) -> None:
    """Answer with ``{"echo": body}``."""
    handler.send_json({"echo": body})


def tls_server_context(certificate: Path, key: Path) -> ssl.SSLContext:
    """A server context presenting ``certificate``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    return context


class Proxy(ThreadingHTTPServer):
    """An HTTP proxy: ``CONNECT host:port`` opens a tunnel, a request in absolute form is
    forwarded (its connection then relayed to that host). Records (method, target,
    Proxy-Authorization) of each request it is asked; with ``password`` set, a request without
    ``Proxy-Authorization: Basic user:password`` is answered 407."""

    daemon_threads = True

    def __init__(self, password: str | None = None) -> None:
        self.password = password
        self.seen: list[tuple[str, str, str | None]] = []
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    @property
    def url(self) -> str:
        """The proxy's URL (without credentials)."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> Proxy:
        """Serve on a daemon thread."""
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.shutdown()
        self.server_close()


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Proxy

    def _allowed(self) -> bool:
        auth = self.headers.get("Proxy-Authorization")
        self.server.seen.append((self.command, self.path, auth))
        if self.server.password is None:
            return True
        expected = "Basic " + base64.b64encode(self.server.password.encode()).decode()
        if auth == expected:
            return True
        self.send_response(407)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False

    def do_CONNECT(self) -> None:  # noqa: N802 - the standard library's name
        if not self._allowed():
            return
        host, _, port = self.path.rpartition(":")
        upstream = socket.create_connection((host, int(port)))
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        _relay(self.connection, upstream)
        self.close_connection = True

    def do_POST(self) -> None:  # noqa: N802 - the standard library's name
        if not self._allowed():
            return
        target = self.path.split("://", 1)[1]
        hostport, _, path = target.partition("/")
        host, _, port = hostport.rpartition(":")
        upstream = socket.create_connection((host, int(port or 80)))
        head = [f"POST /{path} HTTP/1.1"]
        head += [f"{k}: {v}" for k, v in self.headers.items() if k != "Proxy-Authorization"]
        body = self.rfile.read(int(self.headers["Content-Length"]))
        upstream.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        # later requests on this connection go to the same host: relay them as they are
        _relay(self.connection, upstream)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until one side closes."""
    sockets = [client, upstream]
    try:
        while True:
            readable, _, _ = select.select(sockets, [], [], 10)
            if not readable:
                return
            for sock in readable:
                data = sock.recv(65536)
                if not data:
                    return
                (upstream if sock is client else client).sendall(data)
    except OSError:
        return
    finally:
        upstream.close()
