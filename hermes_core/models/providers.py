"""Choosing the provider, model, endpoint, key and wire format for an agent."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from hermes_hookspecs import (
    API_MODES,
    AuthenticationError,
    HermesError,
    ModelClient,
    Provider,
    ProviderSettings,
)
from hermes_runtime.secrets import mark_secret

from ..plugins.registry import Registry


class ProviderResolutionError(HermesError):
    """No usable provider could be chosen from the configuration."""


def missing_base_url(provider: Provider, base_url: str | None) -> str | None:
    """The one-line problem when ``provider`` takes a key but has no endpoint (no configured
    ``base_url`` and no default one, as ``custom``), else None.

    Said before a missing key: without an endpoint, a key alone does not make it work.
    """
    if base_url or provider.default_base_url or not provider.key_env:
        return None
    return (
        f"provider {provider.name!r} needs a base URL: pass --base-url URL or set model.base_url"
        f" (hermes setup --provider {provider.name} --base-url URL)"
    )


def _is_loopback(url: str | None) -> bool:
    host = (urlparse(url).hostname or "") if url else ""
    return host in ("localhost", "::1") or host.startswith("127.")


DEFAULT_API_MODE = "chat_completions"


def api_mode_from_url(base_url: str | None) -> str | None:
    """The wire format a base URL implies, if any: Anthropic's host or a URL ending in
    ``/anthropic`` speak ``anthropic_messages``; the Codex backend speaks ``codex_responses``."""
    if not base_url:
        return None
    parsed = urlparse(base_url)
    host = (parsed.hostname or "").lower()
    path = parsed.path.rstrip("/").lower()
    if host == "api.anthropic.com" or path.endswith("/anthropic"):
        return "anthropic_messages"
    if host == "chatgpt.com" and path.startswith("/backend-api/codex"):
        return "codex_responses"
    return None


def _speaks(provider: Provider, api_mode: str) -> bool:
    return provider.api_mode == api_mode or api_mode in provider.api_modes


def resolve_provider(
    registry: Registry,
    model_config: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
) -> tuple[Provider, ProviderSettings]:
    """Pick the provider, model, endpoint, key and API mode for ``model_config`` (the ``model``
    section, with CLI flags and environment variables applied).

    Provider: ``model.provider``, else the installed provider whose ``detect`` accepts
    ``model.base_url``, else the only installed provider. API mode, first that applies: an explicit
    ``model.api_mode``; the provider's own mode when it is not the default (``anthropic``,
    ``openai-codex``); the mode the base URL implies; ``chat_completions``. A provider with a key
    variable and no key is an error naming the variable, unless the endpoint is on this machine.
    """
    env = os.environ if environ is None else environ
    providers = registry.providers
    installed = ", ".join(sorted(providers)) or "none"
    name = model_config.get("provider")
    base_url = model_config.get("base_url")
    provider: Provider | None = None
    if name:
        registered = providers.get(name)
        if registered is None:
            raise ProviderResolutionError(
                f"unknown provider {name!r} (installed: {installed}); install its plugin or run"
                " `hermes providers list`"
            )
        provider = registered.value
    elif base_url:
        matches = [
            r.value for r in providers.values() if r.value.detect and r.value.detect(base_url)
        ]
        provider = matches[0] if matches else None
    if provider is None:
        if len(providers) == 1:
            provider = next(iter(providers.values())).value
        elif not providers:
            raise ProviderResolutionError(
                "no model provider is installed; install a provider plugin"
                " (e.g. pip install ./plugins/openai) and set model.provider"
            )
        else:
            raise ProviderResolutionError(
                f"no provider chosen (installed: {installed}); run `hermes setup`, pass"
                " --provider NAME or set model.provider in config.yaml"
            )
    url = base_url or provider.default_base_url
    if base_url:
        _check_base_url(str(base_url))
    api_mode = (
        model_config.get("api_mode")
        or (provider.api_mode if provider.api_mode != DEFAULT_API_MODE else None)
        or api_mode_from_url(url)
        or DEFAULT_API_MODE
    )
    if api_mode not in API_MODES:
        raise ProviderResolutionError(
            f"unknown api_mode {api_mode!r} (one of {', '.join(API_MODES)})"
        )
    key = model_config.get("api_key") or (env.get(provider.key_env) if provider.key_env else None)
    mark_secret(provider.key_env, key)  # kept out of commands and redacted from tool results
    if provider.key_env and not key and not _is_loopback(url):
        if missing_base_url(provider, url):  # the endpoint first: a key alone cannot do
            raise AuthenticationError(
                f"provider {provider.name!r} needs a base URL: pass --base-url URL or set"
                f" model.base_url; then set {provider.key_env} in the environment or"
                " $HERMES_HOME/.env unless the URL is on this machine, or run `hermes setup`",
                provider=provider.name,
            )
        raise AuthenticationError(
            f"no API key for provider {provider.name!r}: set {provider.key_env} in the environment"
            " or $HERMES_HOME/.env, or run `hermes setup`",
            provider=provider.name,
        )
    model = model_config.get("default") or provider.default_model
    if not model:
        raise ProviderResolutionError(
            f"no model chosen for provider {provider.name!r}: pass --model NAME or set "
            "model.default"
        )
    settings = ProviderSettings(
        provider=provider.name,
        model=str(model),
        base_url=url,
        api_key=key,
        api_mode=api_mode,
        timeout=float(model_config.get("timeout") or 600.0),
    )
    return provider, settings


def _check_base_url(url: str) -> None:
    """A base URL must be an absolute http(s) URL with a host; anything else is a configuration
    error reported at once, never a request that is retried."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise ProviderResolutionError(f"model.base_url {url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProviderResolutionError(
            f"model.base_url {url!r} is not a valid URL: expected http(s)://HOST[:PORT]/PATH"
        )


def client_factory(
    registry: Registry, provider: Provider, api_mode: str
) -> Callable[[ProviderSettings], ModelClient]:
    """The client factory that speaks ``api_mode`` for ``provider``: its own when it speaks that
    mode, else that of an installed provider whose mode it is (e.g. a custom endpoint ending in
    ``/anthropic`` is reached with the Anthropic provider's client)."""
    if _speaks(provider, api_mode):
        return provider.create_client
    for registered in registry.providers.values():
        if registered.value.api_mode == api_mode:
            return registered.value.create_client
    raise ProviderResolutionError(
        f"provider {provider.name!r} with api_mode {api_mode!r} needs a plugin that speaks"
        f" {api_mode} (installed providers: {', '.join(sorted(registry.providers)) or 'none'})"
    )


def fallback_configs(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``fallback_providers`` entries as ``model``-section dicts, in order.

    Each entry names ``provider`` and optionally ``model``, ``base_url``, ``api_mode`` and
    ``key_env`` (the variable holding its key).
    """
    entries = config.get("fallback_providers") or []
    result = []
    for entry in entries:
        if not isinstance(entry, Mapping) or not entry.get("provider"):
            raise ProviderResolutionError(
                "fallback_providers: each entry needs at least a provider name"
            )
        model_config = {
            "provider": entry["provider"],
            "default": entry.get("model"),
            "base_url": entry.get("base_url"),
            "api_mode": entry.get("api_mode"),
        }
        if entry.get("key_env"):
            model_config["api_key"] = os.environ.get(str(entry["key_env"]))
            mark_secret(str(entry["key_env"]), model_config["api_key"])
        result.append(model_config)
    return result
