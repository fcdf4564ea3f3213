"""Secrets in the configuration: which keys hold them, ``${NAME}`` references to variables, and
marking their values so they are redacted."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hermes_runtime.secrets import mark_secret

from .schema import ConfigSchema

_SECRET_KEY = re.compile(
    r"(?:^|_)(?:(?:api|secret|access|private)_?key|token|secret|password|passphrase)$",
    re.IGNORECASE,
)
_SECRET_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def is_secret_key(dotted: str) -> bool:
    """Whether a configuration key holds a secret by its name: its last part ends in ``api_key``,
    ``secret_key``, ``access_key``, ``private_key``, ``token``, ``secret``, ``password`` or
    ``passphrase`` (``model.api_key``, ``auth_token``, ``client_secret``; not ``max_tokens``,
    ``ssh_key`` or ``key_env``)."""
    return bool(_SECRET_KEY.search(str(dotted).rsplit(".", 1)[-1]))


def secret_reference(value: Any) -> str | None:
    """The variable a secret value refers to when it is written ``${NAME}``, else None."""
    if isinstance(value, str):
        match = _SECRET_REF.fullmatch(value.strip())
        if match:
            return match.group(1)
    return None


def mark_config_secrets(data: Any, schema: ConfigSchema | None = None, prefix: str = "") -> None:
    """Mark as secrets (``hermes_runtime.secrets.mark_secret``) the values of every secret key in a
    configuration (at any depth, lists included): keys secret by their name
    (:func:`is_secret_key`) or declared ``secret`` in ``schema``; and the variables every
    ``key_env`` names."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            dotted = f"{prefix}{key}"
            if str(key) == "key_env" and isinstance(value, str) and value:
                mark_secret(name=value)
            elif isinstance(value, str) and (
                is_secret_key(str(key)) or (schema is not None and schema.is_secret(dotted))
            ):
                ref = secret_reference(value)
                if ref:
                    mark_secret(name=ref)
                else:
                    mark_secret(value=value)
            else:
                mark_config_secrets(value, schema, dotted + ".")
    elif isinstance(data, (list, tuple)):
        for item in data:
            mark_config_secrets(item, schema, prefix)


def _resolve_secret_refs(
    data: dict[str, Any],
    env: Mapping[str, str],
    schema: ConfigSchema | None = None,
    prefix: str = "",
) -> None:
    """Replace each secret key (by its name, or declared ``secret`` in ``schema``) written
    ``${NAME}`` by the value of variable NAME (from the environment or ``.env``); the key is left
    out when NAME is not set."""
    for key in list(data):
        value = data[key]
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            _resolve_secret_refs(value, env, schema, dotted + ".")
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    _resolve_secret_refs(item, env, schema, dotted + ".")
        elif is_secret_key(str(key)) or (schema is not None and schema.is_secret(dotted)):
            ref = secret_reference(value)
            if ref is None:
                continue
            if env.get(ref):
                data[key] = env[ref]
            else:
                del data[key]
