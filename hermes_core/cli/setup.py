"""``hermes setup`` (provider, model, endpoint and key) and ``hermes model`` (switch models)."""

from __future__ import annotations

import os
from typing import Any

import click

from hermes_hookspecs import HermesError

from .helpers import current_state
from .state import CliState


def _set_model(state: CliState, provider: str, model: str | None, base_url: str | None) -> None:
    from ..config.loading import save_config

    data: dict[str, Any] = dict(state.config.file_data)
    section = data.get("model")
    section = dict(section) if isinstance(section, dict) else {}
    section["provider"] = provider
    if model:
        section["default"] = model
    else:
        section.pop("default", None)
    if base_url:
        section["base_url"] = base_url
    else:
        section.pop("base_url", None)
    data["model"] = section
    save_config(state.config.path, data)


def _is_loopback(url: str | None) -> bool:
    from ..models.providers import _is_loopback as loopback

    return loopback(url)


def _takes_namespaced_models(state: CliState, provider: str | None) -> bool:
    """Whether ``provider`` is a router whose model names contain a slash (``vendor/model``):
    its default model has one, or it has no default model (a custom endpoint)."""
    registered = state.registry.providers.get(provider or "")
    if registered is None:
        return False
    default = registered.value.default_model
    return not default or "/" in default


@click.command("setup")
@click.option("--provider", help="Provider name (asked when missing).")
@click.option("--model", help="Model name.")
@click.option("--base-url", help="Endpoint, when not the provider's default.")
@click.option("--api-key", help="API key, stored in $HERMES_HOME/.env only.")
@click.option(
    "--check/--no-check",
    default=True,
    help="Send the endpoint one tiny request to check the URL, key and model (default: check).",
)
def setup(
    provider: str | None,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    check: bool = True,
) -> None:
    """Set provider, model, endpoint and key (config.yaml and .env).

    Then the endpoint is checked with one tiny request (a one-token completion) unless
    --no-check is given.
    """
    from ..config.loading import write_dotenv

    state = current_state()
    providers = state.registry.providers
    if not providers:
        raise HermesError("no model provider is installed; install a provider plugin first")
    names = sorted(providers)
    if provider is None:
        current = state.config.get("model.provider")
        provider = click.prompt(
            "provider", type=click.Choice(names), default=current if current in names else names[0]
        )
    if provider not in providers:
        raise HermesError(f"unknown provider {provider!r} (installed: {', '.join(names)})")
    chosen = providers[provider].value
    same = provider == state.config.get("model.provider")
    saved_model = str(state.config.get("model.default") or "") if same else ""
    saved_url = str(state.config.get("model.base_url") or "") if same else ""
    asking = api_key is None and model is None and base_url is None
    if model is None:
        model = click.prompt(
            "model", default=saved_model or chosen.default_model or "", show_default=True
        )
    if base_url is None and asking:
        base_url = click.prompt(
            "base URL (empty: the provider's default)",
            default=saved_url or chosen.default_base_url or "",
            show_default=True,
        )
    if base_url == (chosen.default_base_url or ""):
        base_url = None
    current_key = os.environ.get(chosen.key_env) if chosen.key_env else None
    if chosen.key_env and api_key is None and asking:
        kept = f"Enter keeps {mask_secret(current_key)}" if current_key else "none set yet"
        api_key = click.prompt(
            f"{chosen.key_env} ({kept})", default="", show_default=False, hide_input=True
        )
    if api_key and not chosen.key_env:
        raise HermesError(f"provider {provider!r} takes no API key")
    from ..models.providers import missing_base_url

    missing = missing_base_url(chosen, base_url)
    if missing:
        raise HermesError(f"{missing}; nothing saved")
    _set_model(state, provider, model or None, base_url or None)
    if api_key and chosen.key_env:
        write_dotenv(state.home / ".env", {chosen.key_env: api_key})
        click.echo(f"saved {chosen.key_env} in {state.home / '.env'} (mode 600)")
    click.echo(
        f"provider {provider}, model {model or chosen.default_model or '-'} "
        f"saved in {state.config.path}"
    )
    url = base_url or chosen.default_base_url
    if chosen.key_env and not (api_key or current_key) and not _is_loopback(url):
        raise HermesError(
            f"no API key for {provider}: chats will fail until {chosen.key_env} is set"
            f" (run `hermes setup` again or add it to {state.home / '.env'})"
        )
    if check:
        _check_endpoint(state, api_key, chosen.key_env)


def _check_endpoint(state: CliState, api_key: str | None, key_env: str | None) -> None:
    """Send the saved endpoint one tiny request through its provider's client; a wrong URL, key
    or model is one line at once (the settings stay saved)."""
    from .doctor_checks import probe_provider

    if api_key and key_env:
        os.environ[key_env] = api_key  # just saved in .env; this process read .env before
    state.reload_config()
    ok, line = probe_provider(state.registry, state.config.data)
    if not ok:
        raise HermesError(
            f"check failed: {line} (the settings are saved; run `hermes setup` again to fix "
            "them, or --no-check to skip the check)"
        )
    click.echo(f"checked: {line}")


def mask_secret(value: str) -> str:
    """A secret shown without revealing it: its first and last characters only."""
    if len(value) <= 8:
        return "*" * len(value)
    return f"{value[:3]}...{value[-4:]}"


@click.command("model")
@click.argument("name", required=False)
@click.option("--provider", help="Switch to this provider too.")
def model(name: str | None, provider: str | None) -> None:
    """Show the model, or switch to NAME (PROVIDER/NAME or --provider)."""
    state = current_state()
    current_provider = state.config.get("model.provider")
    if name is None and provider is None:
        click.echo(f"{current_provider or '-'} / {state.config.get('model.default') or '-'}")
        return
    if (
        name
        and "/" in name
        and provider is None
        and name.split("/", 1)[0] in state.registry.providers
        and not _takes_namespaced_models(state, current_provider)
    ):
        provider, name = name.split("/", 1)
    provider = provider or current_provider
    if not provider:
        raise HermesError("no provider configured: pass --provider NAME or run `hermes setup`")
    if provider not in state.registry.providers:
        installed = ", ".join(sorted(state.registry.providers)) or "none"
        raise HermesError(f"unknown provider {provider!r} (installed: {installed})")
    base_url = state.config.get("model.base_url") if provider == current_provider else None
    from ..models.providers import missing_base_url

    missing = missing_base_url(state.registry.providers[provider].value, base_url)
    if missing:
        raise HermesError(f"{missing}; nothing saved")
    _set_model(state, provider, name, base_url)
    click.echo(f"model: {provider} / {name or '(provider default)'}")
