"""Choosing the provider, model, endpoint, key and wire format for an agent."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from hermes_hookspecs import API_MODES, AuthenticationError, HermesError, Provider, ProviderSettings

from .registry import Registry


class ProviderResolutionError(HermesError):
    """No usable provider could be chosen from the configuration."""


def _is_loopback(url: str | None) -> bool:
    host = (urlparse(url).hostname or "") if url else ""
    return host in ("localhost", "::1") or host.startswith("127.")


def resolve_provider(
    registry: Registry,
    model_config: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
) -> tuple[Provider, ProviderSettings]:
    """Pick the provider for ``model_config`` (the ``model`` section, with CLI and env applied).

    The provider is ``model.provider`` when set, else the installed provider whose ``detect``
    accepts ``model.base_url``, else the only installed provider. The API mode is ``model.api_mode``
    when set, else the provider's own. A provider with a key variable and no key configured is an
    error naming the variable, unless the endpoint is on this machine.
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
                " (e.g. pip install -e ./plugins/openai) and set model.provider"
            )
        else:
            raise ProviderResolutionError(
                f"no provider chosen (installed: {installed}); pass --provider NAME or set"
                " model.provider in config.yaml"
            )
    api_mode = model_config.get("api_mode") or provider.api_mode
    if api_mode not in API_MODES:
        raise ProviderResolutionError(
            f"unknown api_mode {api_mode!r} (one of {', '.join(API_MODES)})"
        )
    url = base_url or provider.default_base_url
    key = model_config.get("api_key") or (env.get(provider.key_env) if provider.key_env else None)
    if provider.key_env and not key and not _is_loopback(url):
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
