"""hermes provider plugin: Anthropic's Messages API.

Registers the provider ``anthropic`` (API mode ``anthropic_messages``). The ``anthropic`` SDK is
imported by the client on its first request (or by :meth:`AnthropicClient.prepare`), never when
this module is imported, so ``hermes --help`` does not pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from hermes_hookspecs import Provider, hookimpl

if TYPE_CHECKING:
    from hermes_hookspecs import ProviderSettings

    from .client import AnthropicClient

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "create_client",
    "detect",
    "hermes_register_providers",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-sonnet-4-5"
KEY_ENV = "ANTHROPIC_API_KEY"


def detect(base_url: str) -> bool:
    """Whether ``base_url`` speaks Anthropic messages: host ``api.anthropic.com``, or a path that
    ends in ``/anthropic`` (the convention of gateways that offer an Anthropic-compatible API)."""
    try:
        parsed = urlparse(base_url or "")
    except ValueError:
        return False
    host = (parsed.hostname or "").lower()
    return host == "api.anthropic.com" or parsed.path.rstrip("/").lower().endswith("/anthropic")


def create_client(settings: ProviderSettings) -> AnthropicClient:
    """The model client for ``settings``; the SDK itself is loaded on first use."""
    from .client import AnthropicClient

    return AnthropicClient(settings)


@hookimpl
def hermes_register_providers(register: Callable[[Provider], None]) -> None:
    """Register the ``anthropic`` provider."""
    register(
        Provider(
            name="anthropic",
            api_mode="anthropic_messages",
            create_client=create_client,
            default_base_url=DEFAULT_BASE_URL,
            key_env=KEY_ENV,
            detect=detect,
            description="Anthropic Messages API (Claude): streaming, thinking, prompt caching",
            default_model=DEFAULT_MODEL,
        )
    )
