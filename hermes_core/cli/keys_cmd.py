"""``hermes keys``: the credential pools of config.yaml (``providers.<name>.keys``) and the
shared state of each key, never its value."""

from __future__ import annotations

import time
from typing import Any

import click

from hermes_hookspecs import HermesError

from ..credentials import configured_keys, make_pool
from ..credentials.pool import KeyPool
from .helpers import current_state, show_json, show_table


def _pools(provider: str | None) -> list[KeyPool]:
    """The pools of the configuration (of ``provider`` only, when given)."""
    state = current_state()
    config = state.config.data
    names = [provider] if provider else sorted((config.get("providers") or {}).keys())
    pools = []
    for name in names:
        pool = make_pool(config, name, state.host.session_store)
        if pool is not None:
            pools.append(pool)
        elif provider:
            raise HermesError(
                f"provider {name!r} has no keys: `hermes keys add {name} VARIABLE` adds one"
            )
    return pools


def key_rows(pools: list[KeyPool]) -> list[dict[str, Any]]:
    """One row per key: provider, id, label, variable, state, uses, errors (no value)."""
    now = time.time()
    rows = []
    for pool in pools:
        states = pool.states()
        for key in pool.keys:
            state = states[key.id]
            if not key.value:
                status = f"missing (${key.env} is not set)"
            elif state.cooldown_until > now:
                until = time.strftime("%Y-%m-%d %H:%M", time.localtime(state.cooldown_until))
                status = f"{state.reason or 'cooling'} until {until}"
            else:
                status = "ok"
            rows.append(
                {
                    "provider": pool.provider,
                    "id": key.id,
                    "label": key.label,
                    "env": key.env,
                    "state": status,
                    "uses": state.uses,
                    "errors": state.errors,
                }
            )
    return rows


@click.group("keys")
def keys_group() -> None:
    """Credential pools: list, add, remove and reset keys."""


@keys_group.command("list")
@click.argument("provider", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def keys_list(provider: str | None, as_json: bool) -> None:
    """Each pooled key with its state, uses and errors (never its value)."""
    rows = key_rows(_pools(provider))
    if as_json:
        show_json(rows)
        return
    if not rows:
        click.echo("no credential pools: `hermes keys add PROVIDER VARIABLE` starts one")
        return
    show_table(
        [
            [
                r["provider"],
                r["id"],
                r["label"] or "-",
                r["env"],
                r["state"],
                str(r["uses"]),
                str(r["errors"]),
            ]
            for r in rows
        ],
        ["PROVIDER", "ID", "LABEL", "VARIABLE", "STATE", "USES", "ERRORS"],
    )


@keys_group.command("add")
@click.argument("provider")
@click.argument("variable")
@click.option("--id", "key_id", default=None, help="The key's id (default: the variable's name).")
@click.option("--label", default=None, help="A label shown by `hermes keys list`.")
def keys_add(provider: str, variable: str, key_id: str | None, label: str | None) -> None:
    """Add the key held by VARIABLE (in the environment or .env) to PROVIDER's pool."""
    state = current_state()
    if not variable.replace("_", "").isalnum() or variable[0].isdigit():
        raise HermesError(
            f"{variable!r} is not a variable name: keys are referred to by the variable that "
            "holds them (put the value in $HERMES_HOME/.env)"
        )
    entries = list(
        ((state.config.data.get("providers") or {}).get(provider) or {}).get("keys") or []
    )
    entry: dict[str, str] = {"env": variable}
    if key_id:
        entry["id"] = key_id
    if label:
        entry["label"] = label
    config = {"providers": {provider: {"keys": [*entries, entry]}}}
    added = configured_keys(config, provider)[-1]  # checks the id and duplicates
    state.set_config(f"providers.{provider}.keys", [*entries, entry])
    note = "" if added.value else f" (${variable} is not set yet)"
    click.echo(f"added key {added.id} to {provider}{note}")


@keys_group.command("remove")
@click.argument("provider")
@click.argument("key_id")
def keys_remove(provider: str, key_id: str) -> None:
    """Remove KEY_ID from PROVIDER's pool and forget its state."""
    state = current_state()
    pool = next(iter(_pools(provider)))
    if key_id not in [k.id for k in pool.keys]:
        raise HermesError(f"provider {provider!r} has no key {key_id!r}: `hermes keys list`")
    entries = list(state.config.data["providers"][provider]["keys"])
    keep = [e for e, k in zip(entries, pool.keys, strict=True) if k.id != key_id]
    state.set_config(f"providers.{provider}.keys", keep)
    pool.reset([key_id])
    click.echo(f"removed key {key_id} from {provider}")


@keys_group.command("reset")
@click.argument("provider")
@click.argument("key_id", required=False)
def keys_reset(provider: str, key_id: str | None) -> None:
    """Clear the cooldowns and counts of PROVIDER's keys (or of KEY_ID only)."""
    pool = next(iter(_pools(provider)))
    if key_id is not None and key_id not in [k.id for k in pool.keys]:
        raise HermesError(f"provider {provider!r} has no key {key_id!r}: `hermes keys list`")
    pool.reset(None if key_id is None else [key_id])
    click.echo(f"reset {key_id or 'every key'} of {provider}")
