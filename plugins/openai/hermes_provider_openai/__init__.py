"""hermes providers built on the official ``openai`` SDK: OpenAI, OpenRouter, DeepSeek, Ollama,
any OpenAI-compatible endpoint (``custom``), and the Codex backend (Responses API).

Importing this module is cheap: the SDK is imported by the client on its first request, so
``hermes --help`` and ``hermes plugins list`` never load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_hookspecs import hookimpl

if TYPE_CHECKING:
    from hermes_hookspecs import ModelClient, ProviderSettings

CHAT = "chat_completions"
RESPONSES = "codex_responses"


def _parsed(url: str) -> Any:
    from urllib.parse import urlparse

    try:
        return urlparse(url if "://" in url else f"//{url}")
    except ValueError:
        return None


def _host_is(*hosts: str) -> Any:
    def detect(base_url: str) -> bool:
        parsed = _parsed(base_url or "")
        host = ((parsed.hostname if parsed else None) or "").lower()
        return any(host == h or host.endswith("." + h) for h in hosts)

    return detect


def _detect_ollama(base_url: str) -> bool:
    parsed = _parsed(base_url or "")
    try:
        return bool(parsed) and parsed.port == 11434
    except ValueError:  # a malformed port
        return False


def _detect_codex(base_url: str) -> bool:
    return "chatgpt.com/backend-api/codex" in (base_url or "").lower()


def create_client(settings: ProviderSettings) -> ModelClient:
    """Build the hermes client for ``settings`` (the SDK itself is imported on first use)."""
    from .client import OpenAIClient

    return OpenAIClient(settings)


# name, api mode, other modes, base URL, key variable, detect, default model, description
PROVIDERS: tuple[tuple[Any, ...], ...] = (
    (
        "openai",
        CHAT,
        (RESPONSES,),
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        _host_is("api.openai.com"),
        "gpt-5",
        "OpenAI platform API (chat completions; Responses with --api-mode codex_responses)",
    ),
    (
        "openrouter",
        CHAT,
        (),
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        _host_is("openrouter.ai"),
        "anthropic/claude-sonnet-4.5",
        "OpenRouter: many vendors' models behind one key (prompt caching for Claude models)",
    ),
    (
        "deepseek",
        CHAT,
        (),
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
        _host_is("api.deepseek.com"),
        "deepseek-chat",
        "DeepSeek API (deepseek-chat, deepseek-reasoner)",
    ),
    (
        "ollama",
        CHAT,
        (),
        "http://localhost:11434/v1",
        None,
        _detect_ollama,
        None,
        "Ollama on this machine (no key; pass --model with a model you have pulled)",
    ),
    (
        "custom",
        CHAT,
        (RESPONSES,),
        None,
        "CUSTOM_API_KEY",
        None,
        None,
        "Any OpenAI-compatible endpoint given with --base-url (no key needed on loopback)",
    ),
    (
        "openai-codex",
        RESPONSES,
        (),
        "https://chatgpt.com/backend-api/codex",
        "OPENAI_API_KEY",
        _detect_codex,
        "gpt-5-codex",
        "OpenAI Codex backend (Responses API, stateless with encrypted reasoning replay)",
    ),
)


@hookimpl
def hermes_register_providers(register: Any) -> None:
    """Register the OpenAI-SDK providers."""
    import dataclasses

    from hermes_hookspecs import Provider

    fields = {f.name for f in dataclasses.fields(Provider)}
    for name, mode, other_modes, url, key_env, detect, model, description in PROVIDERS:
        extra = {"api_modes": other_modes} if "api_modes" in fields else {}
        register(
            Provider(
                name=name,
                api_mode=mode,
                create_client=create_client,
                default_base_url=url,
                key_env=key_env,
                detect=detect,
                description=description,
                default_model=model,
                **extra,
            )
        )
