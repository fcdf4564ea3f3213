"""Calling the model: the active provider and client, interruptible calls with a stale-response
timeout, retries with jittered backoff, credential refresh and pooled keys, and fallback
providers (the auxiliary models of side tasks are in :mod:`.auxiliary`)."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import (
    Cancelled,
    HermesError,
    ModelClient,
    ModelRequest,
    ModelResponse,
    ProviderError,
    ProviderSettings,
)
from hermes_runtime.secrets import mark_secret
from hermes_runtime.threads import Workers

from ..credentials import KeyRouter, PooledKey, make_pool
from ..loop.events import Events
from ..plugins.manager import PluginManager
from ..plugins.registry import Registry
from .providers import client_factory, fallback_configs, resolve_provider

POLL_SECONDS = 0.05
MODEL_WORKERS = Workers("hermes-model")
"""The threads model calls run on, shared by every agent of the process (a gateway builds one
agent per message: a pool per agent started a thread per turn)."""
MAX_BACKOFF_SECONDS = 60.0
FALLBACK_KINDS = frozenset(
    {"rate_limit", "billing", "overloaded", "server", "auth", "model_not_found"}
)
"""Errors that move a turn to the next fallback provider (after retries, for retryable ones)."""


INTERRUPTED = "interrupted by the user"
"""The message of the :class:`Cancelled` an interrupted call raises."""


@dataclass
class ActiveModel:
    """The client a turn is using, and where it came from."""

    client: ModelClient
    model: str
    provider: str
    settings: ProviderSettings | None = None
    create_client: Callable[[ProviderSettings], ModelClient] | None = None
    refreshed: bool = False
    router: KeyRouter | None = None
    """The provider's credential pool, when ``providers.<name>.keys`` configures one."""


class ModelConnection:
    """The model an agent talks to, with the policies around each call.

    :param registry: to resolve providers (primary and fallbacks).
    :param plugins: for the ``hermes_refresh_credentials`` hook.
    :param config: the effective configuration.
    :param events: status messages about retries and switches go here.
    :param client: a model client to use directly instead of resolving a provider.
    :param store: the session store, where credential pools share their keys' state.
    """

    def __init__(
        self,
        registry: Registry,
        plugins: PluginManager,
        config: Mapping[str, Any],
        events: Events,
        client: ModelClient | None = None,
        store: object = None,
    ) -> None:
        self.store = store
        self.registry = registry
        self.plugins = plugins
        self.config = config
        self.events = events
        agent_cfg = config.get("agent") or {}
        self.max_retries = int(agent_cfg.get("api_max_retries", 3))
        self.retry_delay = float(agent_cfg.get("retry_base_delay", 1.0))
        self.stale_timeout = float(agent_cfg.get("stale_timeout") or 0) or None
        model_cfg = config.get("model") or {}
        if client is not None:
            self.primary = ActiveModel(
                client,
                str(model_cfg.get("default") or "scripted"),
                str(model_cfg.get("provider") or "in-process"),
            )
        else:
            self.primary = self._connect(model_cfg)
        self.active = self.primary
        self.switches: list[dict[str, Any]] = []
        self.key_id = ""
        """The id of the pooled key that made the last request ("" when not pooled)."""
        self._fallbacks_left: list[dict[str, Any]] | None = None

    def _connect(self, model_config: Mapping[str, Any]) -> ActiveModel:
        name = str(model_config.get("provider") or "")
        pool = make_pool(self.config, name, self.store) if name else None
        if pool is not None:  # each request leases its key; this one only resolves
            first = next((k.value for k in pool.keys if k.value), None)
            model_config = {**model_config, "api_key": first or "unset-pooled-key"}
        provider, settings = resolve_provider(self.registry, model_config)
        settings.config = self.config
        create = client_factory(self.registry, provider, settings.api_mode)
        active = ActiveModel(create(settings), settings.model, settings.provider, settings, create)
        if pool is not None:
            say = functools.partial(self.events.emit, "status")
            active.router = KeyRouter(pool, settings, create, lambda t: say(text=t))
        return active

    @property
    def rotations(self) -> int:
        """How many times the primary provider's pooled key changed."""
        router = self.primary.router
        return router.rotations if router is not None else 0

    def start_turn(self) -> None:
        """Go back to the primary provider: a fallback switch lasts one turn."""
        self.active = self.primary
        self.primary.refreshed = False
        self._fallbacks_left = None
        if self.primary.router is not None:
            self.primary.router.start_turn()

    def downshift(self, model: str) -> bool:
        """Use ``model`` on the primary provider for the rest of the turn (a spend cap is
        nearly reached); ``False`` when a fallback provider is answering now."""
        if self.active is not self.primary:
            return False
        self.active = dataclasses.replace(self.primary, model=model)
        return True

    def close(self) -> None:
        """Release the connection (its calls ran on the process's shared model workers, which
        keep running for other agents)."""

    def prepare(self) -> None:
        """Let the client import its SDK now (called in the background by interactive UIs)."""
        prepare = getattr(self.active.client, "prepare", None)
        if callable(prepare):
            prepare()

    # --- one call with its policies --------------------------------------------------------

    def call(
        self,
        make_request: Callable[[str, threading.Event], ModelRequest],
        cancel: threading.Event,
        *,
        watched: bool = False,
    ) -> ModelResponse:
        """Send ``make_request(model, request_cancel)`` until it succeeds or the policies give up.
        ``watched``: another thread abandons this one on interrupt, so the client may be called
        on this thread whether it watches ``request.cancel`` or not.

        Retryable errors are retried with jittered exponential backoff (``Retry-After`` wins);
        an auth error first asks ``hermes_refresh_credentials`` for a new key; then the fallback
        providers are tried in order. Raises the last :class:`ProviderError`, or
        :class:`Cancelled` when ``cancel`` is set (nothing the call produced may be kept; an
        interrupt is never retried and never moves to a fallback).
        """
        attempt = 0
        while True:
            direct = self._client_watches_cancel(watched)
            request_cancel = cancel if direct else threading.Event()
            request = make_request(self.active.model, request_cancel)
            router, lease = self.active.router, None
            try:
                if router is not None:  # the request carries the key it goes out with
                    lease, self.active.client = router.take()
                    request.key_id = lease.key.id
                self.key_id = request.key_id
                response = self._attempt(request, request_cancel, cancel, direct)
                if router is not None and lease is not None:
                    router.succeeded(lease)
                return response
            except ProviderError as exc:
                if exc.provider is None:
                    exc.provider = self.active.provider
                self._name_endpoint(exc)
                if exc.kind == "context_overflow":
                    raise
                if router is not None and lease is not None:
                    step = router.after_error(
                        lease,
                        exc,
                        retries_left=attempt < self.max_retries,
                        refresh=self._refresh_key,
                    )
                    if step == "again":  # the next key: not a retry
                        continue
                    if step == "exhausted":
                        exc = ProviderError(
                            router.pool.cooling_message(),
                            kind=exc.kind if exc.kind in FALLBACK_KINDS else "rate_limit",
                            status=exc.status,
                            retryable=False,
                            provider=exc.provider,
                        )
                if exc.retryable and attempt < self.max_retries:
                    attempt += 1
                    delay = self.backoff(attempt, exc.retry_after)
                    self.events.emit(
                        "status",
                        text=f"{exc.provider}: {exc}; retry {attempt}/{self.max_retries} "
                        f"in {delay:.1f}s",
                    )
                    if cancel.wait(delay):
                        raise Cancelled(INTERRUPTED) from None
                    continue
                if exc.kind == "auth" and router is None and self._refresh_credentials():
                    attempt = 0
                    continue
                if exc.kind in FALLBACK_KINDS and self._switch_to_fallback(exc):
                    attempt = 0
                    continue
                raise exc from None

    def _attempt(
        self,
        request: ModelRequest,
        request_cancel: threading.Event,
        cancel: threading.Event,
        direct: bool,
    ) -> ModelResponse:
        """One attempt (:meth:`_call_once`); a failure is told to ``hermes_request_failed``."""
        try:
            return self._call_once(request, request_cancel, cancel, direct)
        except BaseException as exc:
            self.plugins.call_each("hermes_request_failed", request=request, error=exc)
            raise

    def _name_endpoint(self, exc: ProviderError) -> None:
        """Put the endpoint in a connection or timeout error's message, so the user sees which
        URL could not be reached."""
        settings = self.active.settings
        url = settings.base_url if settings is not None else None
        if url and exc.kind in ("connection", "timeout") and url not in str(exc):
            exc.args = (f"{exc} ({url})", *exc.args[1:])

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``attempt`` (1-based)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, MAX_BACKOFF_SECONDS)
        base = self.retry_delay * (2.0 ** (attempt - 1))
        return min(base * (0.5 + random.random() / 2), MAX_BACKOFF_SECONDS)

    def _client_watches_cancel(self, watched: bool = False) -> bool:
        """Whether the active client answers an interrupt by itself (``watches_cancel``), or
        this thread is ``watched``, so that it can run on this thread; never with a stale
        timeout to enforce."""
        if self.stale_timeout is not None:
            return False
        return watched or bool(getattr(self.active.client, "watches_cancel", False))

    def _call_once(
        self,
        request: ModelRequest,
        request_cancel: threading.Event,
        cancel: threading.Event,
        direct: bool = False,
    ) -> ModelResponse:
        """One call of the active client: ``direct``ly on this thread for a client that watches
        ``request.cancel`` (then ``cancel`` itself), else on a worker thread watched here."""
        self.events.emit("thinking", active=True)
        try:
            if direct:
                response = self.active.client.complete(request)
            else:
                response = self._watched(request, request_cancel, cancel)
        except Exception:
            if cancel.is_set():  # a client that reports the interrupt as an error
                raise Cancelled(INTERRUPTED) from None
            raise
        finally:
            self.events.emit("thinking", active=False)
        if cancel.is_set():  # answered, but after the user asked to stop: drop it
            raise Cancelled(INTERRUPTED)
        if not isinstance(response, ModelResponse):
            raise HermesError(f"model client returned {type(response).__name__}, not ModelResponse")
        return response

    def _watched(
        self, request: ModelRequest, request_cancel: threading.Event, cancel: threading.Event
    ) -> Any:
        """The client's answer, from a worker thread, while watching for an interrupt and for
        ``agent.stale_timeout`` (either cancels the request)."""
        deadline = time.monotonic() + self.stale_timeout if self.stale_timeout else None
        future = MODEL_WORKERS.submit(self.active.client.complete, request)
        while True:
            try:
                return future.result(timeout=POLL_SECONDS)
            except cf.TimeoutError:
                if cancel.is_set():
                    request_cancel.set()
                    future.cancel()
                    raise Cancelled(INTERRUPTED) from None
                if deadline is not None and time.monotonic() > deadline:
                    request_cancel.set()
                    future.cancel()
                    raise ProviderError(
                        f"no response within {self.stale_timeout:g}s (agent.stale_timeout)",
                        kind="timeout",
                    ) from None

    def _refresh_key(self, key: PooledKey) -> str | None:
        """A new value for the pooled ``key`` from ``hermes_refresh_credentials``, if any."""
        settings = self.active.settings
        if settings is None:
            return None
        answer = self.plugins.call_first(
            "hermes_refresh_credentials",
            provider=self.active.provider,
            settings=dataclasses.replace(settings, api_key=key.value),
        )
        if answer is None or not answer.value:
            return None
        self.events.emit(
            "status", text=f"{self.active.provider}: key {key.id} refreshed by {answer.record.name}"
        )
        return str(answer.value)

    def _refresh_credentials(self) -> bool:
        active = self.active
        if active.refreshed or active.settings is None or active.create_client is None:
            return False
        active.refreshed = True
        answer = self.plugins.call_first(
            "hermes_refresh_credentials", provider=active.provider, settings=active.settings
        )
        if answer is None or not answer.value:
            return False
        active.settings.api_key = str(answer.value)
        mark_secret(value=active.settings.api_key)
        active.client = active.create_client(active.settings)
        who = answer.record.name
        self.events.emit("status", text=f"{active.provider}: credentials refreshed by plugin {who}")
        return True

    def _switch_to_fallback(self, error: ProviderError) -> bool:
        if self._fallbacks_left is None:
            self._fallbacks_left = fallback_configs(self.config)
        while self._fallbacks_left:
            model_config = self._fallbacks_left.pop(0)
            try:
                candidate = self._connect(model_config)
            except HermesError as exc:
                self.events.emit(
                    "status", text=f"fallback {model_config.get('provider')} unusable: {exc}"
                )
                continue
            switch = {
                "from_provider": self.active.provider,
                "from_model": self.active.model,
                "to_provider": candidate.provider,
                "to_model": candidate.model,
                "reason": f"{error.kind}: {error}",
                "at": time.time(),
            }
            self.switches.append(switch)
            self.events.emit(
                "status",
                text=f"{self.active.provider} failed ({error.kind}); switching to "
                f"{candidate.provider} ({candidate.model}) for this turn",
            )
            self.active = candidate
            return True
        return False
