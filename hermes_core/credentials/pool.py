"""A provider's pool of API keys: the keys (values by reference only), their shared state
(cooldowns and use counts, in the session store with compare-and-swap), and the choice of the
key for each request.

.. code-block:: yaml

    providers:
      openai:
        strategy: round_robin        # fill_first (default), round_robin, least_used, random
        cooldown_seconds: 3600       # a usage limit that names no reset
        warm_seconds: 300            # stay on a key while its prompt cache is warm
        keys:
          - {id: team, env: OPENAI_KEY_TEAM, label: "team quota"}
          - {id: mine, value: "${OPENAI_KEY_MINE}"}
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import HermesError, KeyState, KeyStateStore

STRATEGIES = ("fill_first", "round_robin", "least_used", "random")
_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_KEY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
STATE_REREAD_SECONDS = 1.0
"""How old the pool's copy of the shared state may be before a choice reads it again."""


@dataclass(frozen=True)
class PooledKey:
    """One key of a pool: its id, label, the variable that holds it, and its value (``None``
    when the variable is not set)."""

    id: str
    label: str
    env: str
    value: str | None

    @property
    def fingerprint(self) -> str:
        """A digest of the value: the state of an earlier value is not this one's."""
        return hashlib.sha256((self.value or "").encode()).hexdigest()[:16]


def pool_settings(config: Mapping[str, Any], provider: str) -> Mapping[str, Any]:
    """``providers.<provider>`` (empty when not configured)."""
    section = (config.get("providers") or {}).get(provider)
    return section if isinstance(section, Mapping) else {}


def configured_keys(
    config: Mapping[str, Any], provider: str, environ: Mapping[str, str] | None = None
) -> list[PooledKey]:
    """The keys of ``provider``'s pool, in order; empty when it has none.

    :raises HermesError: an entry without a variable, a value that is not a reference (keys
        are never copied into config.yaml), a bad or repeated id, in one line.
    """
    env = os.environ if environ is None else environ
    entries = pool_settings(config, provider).get("keys") or []
    where = f"providers.{provider}.keys"
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise HermesError(f"{where} must be a list of {{id, env}} entries")
    keys: list[PooledKey] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            entry = {"value": entry}
        if not isinstance(entry, Mapping):
            raise HermesError(f"{where}[{i}] must be a mapping with id and env")
        name = entry.get("env")
        if name is None and entry.get("value") is not None:
            found = _REFERENCE.match(str(entry["value"]))
            if found is None:
                raise HermesError(
                    f"{where}[{i}]: a key's value is never written in config.yaml; put it in "
                    "$HERMES_HOME/.env and refer to it as env: NAME or value: ${NAME}"
                )
            name = found.group(1)
        if not name:
            raise HermesError(f"{where}[{i}] needs env: NAME (the variable holding the key)")
        key_id = str(entry.get("id") or name.lower())
        if not _KEY_ID.match(key_id):
            raise HermesError(f"{where}[{i}]: {key_id!r} is not a key id (letters, digits, _.-)")
        if any(k.id == key_id for k in keys):
            raise HermesError(f"{where}: the id {key_id!r} is used twice")
        keys.append(PooledKey(key_id, str(entry.get("label") or ""), str(name), env.get(name)))
    return keys


@dataclass(frozen=True)
class Lease:
    """The key a request goes out with: whatever happens to the request is charged to it."""

    pool: KeyPool
    key: PooledKey


class MemoryKeyStates:
    """Key state kept in this process (for a store that keeps none), with the same
    compare-and-swap as a store's."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], KeyState] = {}
        self._lock = threading.Lock()

    def key_states(self, provider: str) -> dict[str, KeyState]:
        """The state of each key of ``provider``."""
        with self._lock:
            return {k: v for (p, k), v in self._rows.items() if p == provider}

    def swap_key_state(
        self, provider: str, key_id: str, expected_version: int, state: KeyState
    ) -> bool:
        """Store ``state`` if the version is still ``expected_version``."""
        with self._lock:
            current = self._rows.get((provider, key_id))
            if (current.version if current else 0) != expected_version:
                return False
            self._rows[(provider, key_id)] = dataclasses.replace(
                state, version=expected_version + 1
            )
            return True

    def forget_key_states(self, provider: str, key_ids: Sequence[str] | None = None) -> int:
        """Delete the state of ``key_ids`` (all of ``provider``'s keys when ``None``)."""
        with self._lock:
            gone = [
                k for k in self._rows if k[0] == provider and (key_ids is None or k[1] in key_ids)
            ]
            for k in gone:
                del self._rows[k]
            return len(gone)


PROCESS_STATES = MemoryKeyStates()
"""The state of the pools of a process whose store keeps none."""


class KeyPool:
    """The keys of one provider and the choice among them.

    :param provider: the provider's name.
    :param keys: its keys, in order.
    :param store: where the state is shared (a :class:`~hermes_hookspecs.KeyStateStore`).
    :param settings: ``providers.<provider>`` (``strategy``, ``cooldown_seconds``,
        ``warm_seconds``).
    """

    def __init__(
        self,
        provider: str,
        keys: Sequence[PooledKey],
        store: KeyStateStore,
        settings: Mapping[str, Any],
    ) -> None:
        strategy = str(settings.get("strategy") or "fill_first")
        if strategy not in STRATEGIES:
            raise HermesError(
                f"providers.{provider}.strategy {strategy!r} is not one of {', '.join(STRATEGIES)}"
            )
        self.provider = provider
        self.keys = list(keys)
        self.store = store
        self.strategy = strategy
        self.cooldown_seconds = float(settings.get("cooldown_seconds") or 3600.0)
        self.warm_seconds = float(settings.get("warm_seconds", 300.0) or 0.0)
        self._states: dict[str, KeyState] = {}
        self._read_at = -1e9
        self._next = 0

    # --- state --------------------------------------------------------------------------------

    def states(self, now: float | None = None) -> dict[str, KeyState]:
        """The state of each key (a replaced value's old state is not its own), read again
        from the store when older than :data:`STATE_REREAD_SECONDS`."""
        clock = time.monotonic()
        if clock - self._read_at > STATE_REREAD_SECONDS:
            self.reread()
        return self._states

    def reread(self) -> None:
        """Read the shared state now."""
        stored = self.store.key_states(self.provider)
        fresh: dict[str, KeyState] = {}
        for key in self.keys:
            state = stored.get(key.id)
            if state is None:
                fresh[key.id] = KeyState(fingerprint=key.fingerprint)
            elif state.fingerprint != key.fingerprint:  # a new value: a clean slate
                fresh[key.id] = KeyState(fingerprint=key.fingerprint, version=state.version)
            else:
                fresh[key.id] = state
        self._states = fresh
        self._read_at = time.monotonic()

    def _change(self, key: PooledKey, **changes: Any) -> KeyState:
        """Apply ``changes`` (callables get the old value) to ``key``'s shared state with
        compare-and-swap, reading again after each lost race."""
        for _ in range(50):
            stored = self.store.key_states(self.provider).get(key.id)
            if stored is None:
                base, version = KeyState(fingerprint=key.fingerprint), 0
            elif stored.fingerprint != key.fingerprint:
                base, version = KeyState(fingerprint=key.fingerprint), stored.version
            else:
                base, version = stored, stored.version
            values = {
                name: change(getattr(base, name)) if callable(change) else change
                for name, change in changes.items()
            }
            new = dataclasses.replace(base, **values)
            if self.store.swap_key_state(self.provider, key.id, version, new):
                new = dataclasses.replace(new, version=version + 1)
                self._states[key.id] = new
                return new
        raise HermesError(f"could not update the state of key {key.id}: too many writers")

    def used(self, lease: Lease, now: float | None = None) -> None:
        """Count one request made with ``lease``'s key."""
        when = time.time() if now is None else now
        self._change(lease.key, uses=lambda n: n + 1, last_used=when)

    def cool(self, key: PooledKey, until: float, reason: str) -> None:
        """Keep ``key`` out of use until ``until`` (``time.time()``), for ``reason``."""
        self._change(
            key, cooldown_until=lambda old: max(old, until), reason=reason, errors=lambda n: n + 1
        )

    def reset(self, key_ids: Sequence[str] | None = None) -> int:
        """Forget the state of ``key_ids`` (all keys when ``None``)."""
        removed = self.store.forget_key_states(self.provider, key_ids)
        self._read_at = -1e9
        return removed

    # --- choosing -----------------------------------------------------------------------------

    def usable(self, now: float | None = None) -> list[PooledKey]:
        """The keys with a value and no cooldown, in order."""
        when = time.time() if now is None else now
        states = self.states()
        return [
            k for k in self.keys if k.value and states.get(k.id, KeyState()).cooldown_until <= when
        ]

    def lease(
        self, current: str | None = None, now: float | None = None, *, pinned: bool = False
    ) -> Lease | None:
        """The key for the next request; ``current`` (the key of the last request) is kept
        while its prompt cache is warm, or whatever its cache when ``pinned`` (a retry of the
        same key). ``None`` when every key is cooling down."""
        when = time.time() if now is None else now
        usable = self.usable(when)
        if not usable:
            return None
        states = self._states
        if current is not None:
            for key in usable:
                warm = when - states[key.id].last_used <= self.warm_seconds
                if key.id == current and (pinned or warm):
                    return Lease(self, key)
        if self.strategy == "fill_first":
            chosen = usable[0]
        elif self.strategy == "least_used":
            chosen = min(usable, key=lambda k: states[k.id].uses)
        elif self.strategy == "random":
            chosen = random.choice(usable)
        else:  # round_robin: the key used longest ago, across processes
            chosen = min(usable, key=lambda k: (states[k.id].last_used, self.keys.index(k)))
        return Lease(self, chosen)

    def cooling_message(self, now: float | None = None) -> str:
        """Which keys are out of use and until when, in one line."""
        when = time.time() if now is None else now
        states = self.states()
        parts = []
        for key in self.keys:
            state = states.get(key.id, KeyState())
            if not key.value:
                parts.append(f"{key.id} (${key.env} is not set)")
            elif state.cooldown_until > when:
                until = time.strftime("%H:%M:%S", time.localtime(state.cooldown_until))
                parts.append(f"{key.id} ({state.reason or 'cooling'} until {until})")
        return (
            f"every key of provider {self.provider!r} is out of use: {', '.join(parts)}; "
            f"`hermes keys list {self.provider}` shows them, `hermes keys reset` clears them"
        )
