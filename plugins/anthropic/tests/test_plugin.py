"""The plugin as hermes loads it: entry point, registration, lazy SDK import."""

from __future__ import annotations

import subprocess
import sys

from hermes_core.testing import load_plugin, make_host


def test_loads_through_its_entry_point():
    record = load_plugin("anthropic")
    assert "hermes_register_providers" in record.hooks


def registered():
    return make_host(plugins=["anthropic"]).registry.providers["anthropic"].value


def test_registers_the_anthropic_provider():
    provider = registered()
    assert provider.api_mode == "anthropic_messages"
    assert provider.default_base_url == "https://api.anthropic.com"
    assert provider.key_env == "ANTHROPIC_API_KEY"
    assert provider.default_model
    assert provider.description


def test_detect():
    detect = registered().detect
    assert detect("https://api.anthropic.com")
    assert detect("https://api.anthropic.com/v1/")
    assert detect("http://127.0.0.1:8080/anthropic")
    assert detect("https://gateway.example.com/v1/anthropic/")
    assert not detect("https://api.openai.com/v1")
    assert not detect("https://openrouter.ai/api/v1")
    assert not detect("")


def test_importing_the_plugin_does_not_import_the_sdk():
    code = (
        "import sys, hermes_provider_anthropic as p\n"
        "from hermes_provider_anthropic import client, convert, errors\n"
        "from hermes_hookspecs import ProviderSettings\n"
        "c = p.create_client(ProviderSettings(provider='anthropic', model='m', api_key='k'))\n"
        "assert 'anthropic' not in sys.modules, 'anthropic imported'\n"
        "c.prepare()\n"
        "assert 'anthropic' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_sdk_client_is_built_once_with_hermes_settings():
    from hermes_provider_anthropic import create_client

    from hermes_hookspecs import ProviderSettings

    client = create_client(
        ProviderSettings(
            provider="anthropic",
            model="m",
            base_url="http://127.0.0.1:1/anthropic",
            api_key="sk-test",
            timeout=12.5,
        )
    )
    client.prepare()
    sdk = client._get_client()
    assert sdk is client._get_client()
    assert sdk.max_retries == 0
    assert sdk.api_key == "sk-test"
    assert str(sdk.base_url).rstrip("/") == "http://127.0.0.1:1/anthropic"
    assert sdk.timeout == 12.5
    client.close()
