"""The credential pool around a model connection: a client per key, the key each request
leases, and what an error does to the key that made the request (never to whichever key is
current by the time the error is looked at)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

from hermes_hookspecs import KeyStateStore, ModelClient, ProviderError, ProviderSettings
from hermes_runtime.secrets import mark_secret

from .classify import classify, reset_after
from .pool import PROCESS_STATES, KeyPool, Lease, PooledKey, configured_keys, pool_settings

Step = Literal["again", "retry", "normal", "exhausted"]
"""After an error: send again now with the next key (no retry counted), retry the same key
under the retry policy, handle the error as any other, or every key is out of use."""

REVOKED_SECONDS = 10 * 365 * 86400.0
TRANSIENT_COOLDOWN_MAX = 60.0


def make_pool(config: Mapping[str, Any], provider: str, store: object) -> KeyPool | None:
    """``provider``'s pool from ``providers.<provider>.keys``, its state in ``store`` when it
    keeps key state (else in this process); ``None`` without keys."""
    keys = configured_keys(config, provider)
    if not keys:
        return None
    states: KeyStateStore = store if isinstance(store, KeyStateStore) else PROCESS_STATES
    return KeyPool(provider, keys, states, pool_settings(config, provider))


class KeyRouter:
    """The pool of one connection to a provider: leases, clients per key, rotations.

    :param pool: the provider's pool.
    :param settings: what the host resolved for the provider (the key is each lease's).
    :param create_client: builds a client for settings.
    :param say: told of rotations and cooldowns, one line each.
    """

    def __init__(
        self,
        pool: KeyPool,
        settings: ProviderSettings,
        create_client: Callable[[ProviderSettings], ModelClient],
        say: Callable[[str], None],
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.create_client = create_client
        self.say = say
        self.current: str | None = None
        self.rotations = 0
        """How many times the key changed (each costs a full-price read of the prompt)."""
        self._clients: dict[str, ModelClient] = {}
        self._refreshed: set[str] = set()
        self._retried_once: str | None = None  # the key an unknown error was retried on
        self._pinned: str | None = None  # the key the next request must retry with

    def take(self) -> tuple[Lease, ModelClient]:
        """The lease and client of the next request.

        :raises ProviderError: every key is out of use (the message says which and until when).
        """
        pinned, self._pinned = self._pinned, None
        lease = self.pool.lease(pinned or self.current, pinned=pinned is not None)
        if lease is None:
            raise ProviderError(
                self.pool.cooling_message(),
                kind="rate_limit",
                retryable=False,
                provider=self.pool.provider,
            )
        key = lease.key
        if self.current is not None and key.id != self.current:
            self.rotations += 1
            self.say(
                f"{self.pool.provider}: key {self.current} -> {key.id} (rotation "
                f"{self.rotations}; the prompt cache starts cold on a new key)"
            )
        self.current = key.id
        client = self._clients.get(key.id)
        if client is None:
            mark_secret(key.env, key.value)
            client = self.create_client(dataclasses.replace(self.settings, api_key=key.value))
            self._clients[key.id] = client
        return lease, client

    def succeeded(self, lease: Lease) -> None:
        """Count the request made with ``lease``."""
        self._retried_once = None
        lease.pool.used(lease)

    def start_turn(self) -> None:
        """A new turn: a key may be refreshed again."""
        self._refreshed.clear()

    def after_error(
        self,
        lease: Lease,
        error: ProviderError,
        *,
        retries_left: bool,
        refresh: Callable[[PooledKey], str | None],
    ) -> Step:
        """Charge ``error`` to ``lease``'s key (the key that made the request) as the table
        says, and say what the connection does next."""
        error.key_id = lease.key.id
        verdict, rule = classify(error)
        key = lease.key
        now = time.time()
        if verdict == "no_penalty":
            return "normal"
        if verdict == "retry_once":
            if self._retried_once == key.id or error.retryable:
                self._retried_once = None
                return "normal"
            self._retried_once = key.id
            self._pinned = key.id
            return "again"
        if verdict == "retry_same":
            if retries_left:
                self._pinned = key.id  # after Retry-After, on the same key
                return "retry"
            others = [k for k in self.pool.usable(now) if k.id != key.id]
            if not others:
                return "normal"  # a single key is never benched for a transient limit
            wait = min(error.retry_after or TRANSIENT_COOLDOWN_MAX, TRANSIENT_COOLDOWN_MAX)
            self.pool.cool(key, now + wait, "rate_limit")
            return "again"
        if verdict == "refresh" and key.id not in self._refreshed:
            self._refreshed.add(key.id)
            value = refresh(key)
            if value and value != key.value:
                self._replace(key, value)
                return "again"
        if verdict == "revoke":
            self.pool.cool(key, now + REVOKED_SECONDS, "revoked")
        elif verdict == "refresh":
            self.pool.cool(key, now + self.pool.cooldown_seconds, "rejected")
        else:  # cooldown
            wait = reset_after(error, now) or self.pool.cooldown_seconds
            self.pool.cool(key, now + wait, "usage_limit")
        self.say(f"{self.pool.provider}: key {key.id} set aside ({rule}): {error}")
        return "again" if self.pool.usable(now) else "exhausted"

    def _replace(self, key: PooledKey, value: str) -> None:
        """Use ``value`` for ``key`` from now on in this process (its old state is not the
        new value's)."""
        mark_secret(key.env, value)
        fresh = dataclasses.replace(key, value=value)
        self.pool.keys = [fresh if k.id == key.id else k for k in self.pool.keys]
        self._clients.pop(key.id, None)
        self.pool.reread()
