"""The process's shared verifying TLS contexts (hermes_runtime.tls)."""

from __future__ import annotations

import ssl
from pathlib import Path

import certifi
import pytest

from hermes_runtime.tls import default_context_maker, shared_context


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
