"""The plugin loads through its entry point, registers its providers, and never imports the SDK
before a request is made."""

from __future__ import annotations

import subprocess
import sys

import hermes_provider_openai as plugin
import pytest

from hermes_core.testing import load_plugin, make_host
from hermes_hookspecs import ProviderError, ProviderSettings

EXPECTED = {
    # name: (api mode, base URL, key variable)
    "openai": ("chat_completions", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openrouter": ("chat_completions", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "deepseek": ("chat_completions", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "ollama": ("chat_completions", "http://localhost:11434/v1", None),
    "custom": ("chat_completions", None, "CUSTOM_API_KEY"),
    "openai-codex": (
        "codex_responses",
        "https://chatgpt.com/backend-api/codex",
        "OPENAI_API_KEY",
    ),
}


@pytest.fixture(scope="module")
def providers():
    return {name: r.value for name, r in make_host(plugins=["openai"]).registry.providers.items()}


def test_loads_through_its_entry_point():
    record = load_plugin("openai")
    assert "hermes_register_providers" in record.hooks


def test_registers_every_provider(providers):
    assert set(providers) == set(EXPECTED)
    for name, (mode, url, key_env) in EXPECTED.items():
        provider = providers[name]
        assert (provider.api_mode, provider.default_base_url, provider.key_env) == (
            mode,
            url,
            key_env,
        ), name
        assert provider.description and "\n" not in provider.description


def test_default_models(providers):
    assert providers["openai"].default_model
    assert providers["deepseek"].default_model == "deepseek-chat"
    assert providers["openai-codex"].default_model
    assert providers["custom"].default_model is None  # the user names the model


@pytest.mark.parametrize(
    ("name", "url", "expected"),
    [
        ("openai", "https://api.openai.com/v1", True),
        ("openai", "https://api.openai.com.evil.example/v1", False),
        ("openai", "https://openrouter.ai/api/v1", False),
        ("openrouter", "https://openrouter.ai/api/v1", True),
        ("openrouter", "https://OpenRouter.ai/api/v1/", True),
        ("deepseek", "https://api.deepseek.com/v1", True),
        ("deepseek", "https://api.deepseek.com", True),
        ("ollama", "http://localhost:11434/v1", True),
        ("ollama", "http://gpu-box:11434", True),
        ("ollama", "http://localhost:8080/v1", False),
        ("ollama", "http://localhost:notaport/v1", False),
        ("openai-codex", "https://chatgpt.com/backend-api/codex", True),
        ("openai-codex", "https://chatgpt.com/backend-api/codex/responses", True),
        ("openai-codex", "https://chatgpt.com/", False),
    ],
)
def test_detect(providers, name, url, expected):
    assert providers[name].detect(url) is expected


def test_custom_detects_nothing(providers):
    assert providers["custom"].detect is None


def _preparing(proxy: str | None) -> str:
    return (
        "import os, sys, hermes_provider_openai as p\n"
        "from hermes_hookspecs import ProviderSettings\n"
        "for name in [n for n in os.environ if n.lower().endswith('_proxy')]:\n"
        "    del os.environ[name]\n"
        f"if {proxy!r}: os.environ['HTTPS_PROXY'] = {proxy!r}\n"
        "p.hermes_register_providers(lambda provider: None)\n"
        "client = p.create_client(ProviderSettings(provider='custom', model='m',"
        " base_url='https://127.0.0.1:9/v1'))\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
        "client.prepare()\n"
    )


def test_importing_the_plugin_does_not_import_the_sdk():
    # an endpoint reached directly or through an HTTP proxy is asked without the SDK
    for proxy in (None, "http://127.0.0.1:9"):
        code = _preparing(proxy) + "assert 'openai' not in sys.modules\n"
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    # behind a SOCKS proxy, the SDK's client asks it: preparing imports the SDK
    code = _preparing("socks5://127.0.0.1:9").replace(
        "client.prepare()\n",
        "try:\n    client.prepare()\nexcept ImportError:\n    pass  # no SOCKS support installed\n",
    )
    code += "assert 'openai' in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_client_is_built_once_and_reused():
    client = plugin.create_client(
        ProviderSettings(provider="custom", model="m", base_url="http://127.0.0.1:9/v1")
    )
    first = client.sdk
    assert client.sdk is first
    assert first.max_retries == 0  # hermes does the retries
    assert first.api_key == "not-needed"


def test_an_unknown_api_mode_is_refused():
    with pytest.raises(ProviderError, match="anthropic_messages"):
        plugin.create_client(
            ProviderSettings(
                provider="custom", model="m", base_url="http://x/v1", api_mode="anthropic_messages"
            )
        )


def test_custom_without_a_base_url_says_what_to_do():
    with pytest.raises(ProviderError, match="--base-url"):
        plugin.create_client(ProviderSettings(provider="custom", model="m"))
