"""The process's secrets: which variables stay out of commands, which values are redacted."""

from __future__ import annotations

import pytest

from hermes_runtime import secrets


@pytest.fixture(autouse=True)
def _clean_secrets(monkeypatch):
    for name in secrets.KNOWN_SECRET_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    secrets.forget_secrets()
    yield
    secrets.forget_secrets()


def test_marked_and_known_secret_variables_never_reach_a_child_environment():
    secrets.mark_secret("ACME_TOKEN", "acme-token-value-123")
    base = {"PATH": "/bin", "ACME_TOKEN": "acme-token-value-123", "OPENAI_API_KEY": "sk-x"}
    assert secrets.child_environ({}, base) == {"PATH": "/bin"}


def test_the_passthrough_list_lets_a_named_secret_through():
    secrets.mark_secret("ACME_TOKEN", "acme-token-value-123")
    config = {"terminal": {"env_passthrough": ["ACME_TOKEN"]}}
    base = {"ACME_TOKEN": "acme-token-value-123", "OPENAI_API_KEY": "sk-x"}
    assert secrets.child_environ(config, base) == {"ACME_TOKEN": "acme-token-value-123"}
    assert secrets.is_forwardable("ACME_TOKEN", config)
    assert not secrets.is_forwardable("OPENAI_API_KEY", config)
    assert secrets.is_forwardable("LANG", {})


def test_redaction_replaces_marked_values_and_values_of_secret_variables(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-0123456789")
    secrets.mark_secret(value="short")  # too short to redact without mangling ordinary words
    secrets.mark_secret("ACME_TOKEN", "acme-token-value-123")
    text = "a=sk-ant-0123456789 b=acme-token-value-123 c=short"
    assert secrets.redact(text) == f"a={secrets.REDACTED} b={secrets.REDACTED} c=short"


def test_the_longest_secret_is_redacted_first():
    secrets.mark_secret(value="abcdefgh")
    secrets.mark_secret(value="abcdefgh-longer")
    assert secrets.redact("x abcdefgh-longer y") == f"x {secrets.REDACTED} y"


def test_a_secret_is_redacted_however_it_is_encoded():
    import base64
    import binascii

    from hermes_runtime.secrets import forget_secrets, mark_secret, redact

    value = "sk-live-0123456789-secret-value"
    mark_secret(value=value)
    try:
        spelled = [value, value[::-1], binascii.hexlify(value.encode()).decode()]
        spelled.append(spelled[-1].upper())
        for prefix in (b"", b"a", b"ab"):  # the three base64 alignments
            blob = prefix + b"token=" + value.encode() + b"&more"
            spelled.append(base64.b64encode(blob).decode())
            spelled.append(base64.urlsafe_b64encode(blob).decode())
        for text in spelled:
            shown = redact(f"output: {text} end")
            assert "[REDACTED]" in shown, text
            # nothing left from which the value could be decoded
            assert value not in shown and value[::-1] not in shown
        assert redact("an ordinary line of output") == "an ordinary line of output"
    finally:
        forget_secrets()
