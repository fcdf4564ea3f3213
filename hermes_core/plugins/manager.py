"""The plugin manager: finds plugins through entry points, loads each inside its own guard, and
calls hooks so that one broken plugin never takes the others down."""

from __future__ import annotations

import difflib
import functools
import os
import sys
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pluggy

from hermes_hookspecs import PROJECT_NAME, HermesError
from hermes_hookspecs import specs as _specs
from hermes_runtime.entry_points import EntryPoint, scan


def _log() -> Any:
    import logging  # imported on first use: `hermes --help` never needs it

    return logging.getLogger("hermes.plugins")


ENTRY_POINT_GROUP = PROJECT_NAME
HOOK_NAMES: frozenset[str] = frozenset(n for n in dir(_specs) if n.startswith("hermes_"))
CORE_PLUGINS: tuple[tuple[str, str], ...] = (("core_layers", "hermes_core.context.core_layers"),)
"""Plugins that ship inside the core, registered first, in this order."""

MAX_RECORDED_ERRORS = 20
REGISTRATION_PREFIX = f"{PROJECT_NAME}_register_"


class _Pluggy(pluggy.PluginManager):
    """pluggy's manager, finding the hook implementations of a module plugin in the module's
    own namespace: pluggy's general look-up (``inspect.getattr_static`` on every name) costs
    most of the time of loading the plugins, once per process and per call of a resident one."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        """The hookimpl options of ``plugin``'s attribute ``name``; ``None`` when it is not
        one."""
        if type(plugin) is not types.ModuleType:
            return super().parse_hookimpl_opts(plugin, name)
        value = plugin.__dict__.get(name)  # a module's attributes are its namespace
        if type(value) is types.MethodType:
            value = value.__func__
        if type(value) is not types.FunctionType:
            return None
        options = value.__dict__.get(f"{PROJECT_NAME}_impl")
        return options if isinstance(options, dict) else None


class PluginLoadError(HermesError):
    """Raised in strict mode when a plugin failed to load or register."""


class PluginRecord:
    """What is known about one plugin: where it came from and how loading it went.

    ``status`` is ``loaded``, ``error``, ``disabled`` (by config or ``HERMES_DISABLE_PLUGINS``)
    or ``skipped`` (not selected by ``HERMES_PLUGINS``).
    """

    # A plain class rather than a dataclass: class creation is on the start-up path.
    def __init__(
        self,
        name: str,
        module: str,
        dist: str | None = None,
        version: str | None = None,
        source: str = "entry point",
        status: str = "loaded",
        error: str | None = None,
    ) -> None:
        self.name = name
        self.module = module
        self.dist = dist
        self.version = version
        self.source = source
        self.status = status
        self.error = error
        self.hook_errors: list[str] = []
        self.hooks: list[str] = []
        self.plugin: object | None = None

    def __repr__(self) -> str:
        return f"PluginRecord({self.name!r}, status={self.status!r}, error={self.error!r})"

    @property
    def ok(self) -> bool:
        """Loaded and no hook of it has failed."""
        return self.status == "loaded" and not self.hook_errors

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly view of the record."""
        return {
            "name": self.name,
            "module": self.module,
            "dist": self.dist,
            "version": self.version,
            "source": self.source,
            "status": self.status,
            "error": self.error,
            "hook_errors": list(self.hook_errors),
            "hooks": list(self.hooks),
        }


_entry_points_cache: list[EntryPoint] | None = None


def discover_entry_points() -> list[EntryPoint]:
    """Entry points of group ``hermes``, scanned once per process, sorted by (name, dist)."""
    global _entry_points_cache
    if _entry_points_cache is None:
        found = scan(ENTRY_POINT_GROUP)
        found.sort(key=load_order_key)
        _entry_points_cache = found
    return list(_entry_points_cache)


def load_order_key(ep: EntryPoint) -> tuple[int, str, str]:
    """Where an entry point loads: the project's own distributions (named ``hermes-...``)
    first, then every other one; by entry point name, then dist name, within each group. Later
    plugins are called first and their prompt layers replace earlier ones of the same name, so a
    third-party plugin can override a builtin one."""
    own = 0 if ep.dist.lower().startswith("hermes-") else 1
    return own, ep.name, ep.dist


def reset_entry_point_cache() -> None:
    """Forget the scanned entry points (after installing a plugin into the running process)."""
    global _entry_points_cache
    _entry_points_cache = None
    import importlib

    from hermes_runtime.entry_points import forget

    forget()

    importlib.invalidate_caches()


def _split_names(value: str | None) -> list[str]:
    return [n.strip() for n in (value or "").split(",") if n.strip()]


def _given(obj: object) -> object:
    """``obj`` itself: the loader of a plugin object registered in-process."""
    return obj


def _name_of(obj: object) -> str:
    return str(getattr(obj, "__name__", type(obj).__name__))


def _describe(exc: BaseException) -> str:
    text = " ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class FirstResult:
    """The answer of a ``firstresult`` hook: the plugin that decided and its value, or the
    exception that ended the walk (``call_first(..., fail_closed=True)``)."""

    __slots__ = ("error", "record", "value")

    def __init__(
        self, record: PluginRecord, value: Any, error: BaseException | None = None
    ) -> None:
        self.record = record
        self.value = value
        self.error = error

    def __repr__(self) -> str:
        outcome = f"error={self.error!r}" if self.error is not None else f"value={self.value!r}"
        return f"FirstResult({self.record.name!r}, {outcome})"


TRACE_VARIABLE = "HERMES_TRACE_PLUGINS"
"""Set to anything but ``""`` or ``0`` to trace every hook call to stderr."""

TRACE_RESULT_CHARS = 60


def trace_enabled(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` asks for hook calls to be traced."""
    return environ.get(TRACE_VARIABLE, "").strip() not in ("", "0")


def _short_repr(value: Any) -> str:
    import reprlib  # only on the tracing path

    shortener = reprlib.Repr()
    shortener.maxstring = shortener.maxother = TRACE_RESULT_CHARS
    shortener.maxlist = shortener.maxdict = shortener.maxtuple = 4
    try:
        text = shortener.repr(value)
    except Exception as exc:  # a broken __repr__ must not break the call it describes
        text = f"<{type(value).__name__}, repr failed: {type(exc).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= TRACE_RESULT_CHARS else text[: TRACE_RESULT_CHARS - 3] + "..."


def _traced(hook: str, plugin: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` writing one line to stderr per call: hook, plugin, duration, outcome."""

    def traced(**kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            value = function(**kwargs)
        except BaseException as exc:
            _write_trace(hook, plugin, started, f"raised {_describe(exc)[:TRACE_RESULT_CHARS]}")
            raise
        _write_trace(hook, plugin, started, _short_repr(value))
        return value

    return traced


def _write_trace(hook: str, plugin: str, started: float, outcome: str) -> None:
    elapsed = (time.perf_counter() - started) * 1000
    # sys.stderr is looked up on each call: a test runner or the CLI may have replaced it.
    stream = sys.stderr
    stream.write(f"hermes: trace: {hook} <- {plugin} {elapsed:.1f} ms -> {outcome}\n")
    stream.flush()


class PluginManager:
    """Loads hermes plugins and calls their hooks with per-plugin guards.

    Load order (fixed; later-registered plugins are called first, as in pluggy):

    1. the core's own plugins (:data:`CORE_PLUGINS`), in that order;
    2. entry-point plugins of group ``hermes``: the project's own distributions (``hermes-*``)
       first, then the others, each group sorted by entry point name, then dist name;
    3. in-process plugins passed as ``extra`` (tests, embedding programs), in the order given.

    :param only: load only the entry points named here (entry point or dist names); ``None``
        means all. Defaults to ``HERMES_PLUGINS`` when set.
    :param disabled: names never loaded (``plugins.disabled`` and ``HERMES_DISABLE_PLUGINS``).
    :param extra: ``(name, plugin object)`` pairs registered after the entry points.
    :param entry_points: whether to load entry points at all.
    :param strict: raise :class:`PluginLoadError` when any plugin fails to load.
    :param environ: where ``HERMES_PLUGINS``, ``HERMES_DISABLE_PLUGINS`` and
        ``HERMES_TRACE_PLUGINS`` are read (once); ``os.environ`` by default.
    """

    def __init__(
        self,
        *,
        only: Sequence[str] | None = None,
        disabled: Iterable[str] = (),
        extra: Sequence[tuple[str, object]] = (),
        entry_points: bool = True,
        strict: bool = False,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        if only is None and "HERMES_PLUGINS" in env:
            only = _split_names(env["HERMES_PLUGINS"])
        self.only = None if only is None else list(only)
        self.disabled = set(disabled) | set(_split_names(env.get("HERMES_DISABLE_PLUGINS")))
        self.strict = strict
        self.trace = trace_enabled(env)
        """Whether hook calls are traced to stderr (``HERMES_TRACE_PLUGINS``, read once)."""
        self.records: dict[str, PluginRecord] = {}
        self.declared_hooks: dict[str, str] = {}
        """The hooks plugins declare (their ``hookspecs``), each with the plugin declaring it."""
        self.pm: pluggy.PluginManager = _Pluggy(PROJECT_NAME)
        self.pm.add_hookspecs(_specs)
        self._load(extra, entry_points)

    @property
    def hook_names(self) -> frozenset[str]:
        """Every hook a plugin may implement: the contract's and those loaded plugins declare."""
        return HOOK_NAMES | frozenset(self.declared_hooks)

    def registration_hooks(self) -> list[str]:
        """The registration hooks loaded plugins declare: named ``hermes_register_<things>``,
        taking ``register`` alone, each call ``register(name, value)`` (collected by
        ``Registry.named``)."""
        found = []
        for hook in sorted(self.declared_hooks):
            spec = getattr(self.pm.hook, hook).spec
            if hook.startswith(REGISTRATION_PREFIX) and spec and spec.argnames == ("register",):
                found.append(hook)
        return found

    # --- loading ---------------------------------------------------------------------------

    def _load(self, extra: Sequence[tuple[str, object]], entry_points: bool) -> None:
        """Import every plugin, then add the hooks they declare, then register them (in load
        order), so that a plugin may implement a hook another one declares whatever their
        order."""
        import importlib

        loaded: list[tuple[PluginRecord, object]] = []
        for name, module_name in CORE_PLUGINS:
            record = PluginRecord(name=name, module=module_name, source="core")
            if name in self.disabled:
                record.status = "disabled"
                self.records[name] = record
                continue
            load = functools.partial(importlib.import_module, module_name)
            loaded.append((record, self._guarded_load(record, load)))
        if entry_points:
            for ep in discover_entry_points():
                selected = self._selected(ep)
                if selected is not None:
                    loaded.append((selected, self._guarded_load(selected, ep.load)))
        for name, obj in extra:
            module = getattr(obj, "__name__", type(obj).__name__)
            record = PluginRecord(name=name, module=module, source="in-process")
            loaded.append((record, self._guarded_load(record, functools.partial(_given, obj))))
        loaded = [(r, plugin) for r, plugin in loaded if r.status == "loaded"]
        for record, plugin in loaded:
            self._guarded(record, functools.partial(self._declare_hooks, record, plugin))
        for record, plugin in loaded:
            if record.status == "loaded":
                self._guarded(record, functools.partial(self._register, record, plugin))
        self.pm.check_pending()
        failed = [r for r in self.records.values() if r.status == "error"]
        if self.strict and failed:
            raise PluginLoadError(
                "; ".join(f"plugin {r.name!r} failed to load: {r.error}" for r in failed)
            )

    def _selected(self, ep: EntryPoint) -> PluginRecord | None:
        """The record of entry point ``ep`` when it is to load; ``None`` when it is disabled or
        not selected (recorded as such)."""
        dist, version = ep.dist or None, ep.version or None
        record = PluginRecord(name=ep.name, module=ep.value, dist=dist, version=version)
        if ep.name in self.disabled or (dist and dist in self.disabled):
            record.status = "disabled"
        elif self.only is not None and ep.name not in self.only and dist not in self.only:
            record.status = "skipped"
        if record.status != "loaded":
            self.records.setdefault(record.name, record)
            return None
        return record

    def _guarded_load(self, record: PluginRecord, load: Callable[[], object]) -> object:
        """The plugin object ``load`` gives (``None`` when it failed: ``record`` says why)."""
        existing = self.records.get(record.name)
        if existing is not None and existing.status == "loaded":
            record.status = "error"
            record.error = (
                f"plugin name {record.name!r} is already used by {existing.module}"
                f" ({existing.dist or existing.source})"
            )
            self.records[f"{record.name} ({record.dist or record.module})"] = record
            return None
        self.records[record.name] = record
        return self._guarded(record, load)

    def _guarded(self, record: PluginRecord, step: Callable[[], Any]) -> Any:
        """``step()``, or ``None`` when it raised: the plugin is then in error (a broken plugin
        must not break the host)."""
        try:
            return step()
        except Exception as exc:
            record.status = "error"
            record.error = _describe(exc)
            _log().debug("plugin %s failed to load", record.name, exc_info=True)
            return None

    def _declare_hooks(self, record: PluginRecord, plugin: object) -> None:
        """Add the hook specifications ``plugin`` declares in its ``hookspecs`` attribute (a
        module or class of ``@hookspec`` functions), each named ``hermes_...`` and declared by
        no one else."""
        declared = getattr(plugin, "hookspecs", None)
        if declared is None:
            return
        marker = f"{PROJECT_NAME}_spec"
        names = sorted(n for n in dir(declared) if hasattr(getattr(declared, n, None), marker))
        if not names:
            raise HermesError(f"its hookspecs ({_name_of(declared)}) declare no @hookspec")
        for name in names:
            if not name.startswith(f"{PROJECT_NAME}_"):
                raise HermesError(f"declared hook {name} must be named {PROJECT_NAME}_...")
            if name in HOOK_NAMES:
                raise HermesError(f"declared hook {name} is already a hook of the contract")
            if name in self.declared_hooks:
                raise HermesError(
                    f"declared hook {name} is already declared by plugin "
                    f"{self.declared_hooks[name]!r}"
                )
        self.pm.add_hookspecs(declared)
        for name in names:
            self.declared_hooks[name] = record.name

    def _register(self, record: PluginRecord, plugin: object) -> None:
        """Check the hook names of ``plugin`` and register it."""
        self._check_hook_names(plugin)
        self.pm.register(plugin, name=record.name)
        record.plugin = plugin
        record.hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or ())

    def _check_hook_names(self, plugin: object) -> None:
        marker = f"{PROJECT_NAME}_impl"
        known = self.hook_names
        for attr in dir(plugin):
            value = getattr(plugin, attr, None)
            options = getattr(value, marker, None)
            if options is None:
                continue
            # ``@hookimpl(specname=...)`` names the hook; the function's own name is free.
            hook = (options.get("specname") if isinstance(options, dict) else None) or attr
            if hook not in known:
                close = difflib.get_close_matches(hook, known, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                where = f" (specname of {attr})" if hook != attr else ""
                raise HermesError(f"unknown hook {hook}{where}{hint}")

    # --- calling hooks ---------------------------------------------------------------------

    def implementations(
        self, hook: str, *, load_order: bool = False
    ) -> Iterator[tuple[PluginRecord, Callable[..., Any]]]:
        """Each plugin's implementation of ``hook``, in call order (newest plugin first), or
        in load order (oldest first) with ``load_order``.

        An implementation registered under another function name with
        ``@hookimpl(specname=...)`` is found under the hook it names. Each one is yielded as a
        function taking the hook's arguments by keyword (traced to stderr when
        ``HERMES_TRACE_PLUGINS`` is set)."""
        caller = getattr(self.pm.hook, hook)
        impls = caller.get_hookimpls()
        for impl in impls if load_order else reversed(impls):
            record = self.records.get(impl.plugin_name)
            if record is None:
                record = PluginRecord(name=impl.plugin_name, module="?", source="in-process")
            if impl.wrapper or impl.hookwrapper:
                self.record_error(record, hook, HermesError("hook wrappers are not supported"))
                continue
            argnames = impl.argnames
            function = impl.function

            def bound(
                _f: Callable[..., Any] = function, _a: tuple[str, ...] = argnames, **kwargs: Any
            ) -> Any:
                return _f(*[kwargs[a] for a in _a])

            yield record, (_traced(hook, record.name, bound) if self.trace else bound)

    def is_firstresult(self, hook: str) -> bool:
        """Whether ``hook`` is declared ``firstresult`` (one plugin's answer decides)."""
        spec = getattr(self.pm.hook, hook).spec
        return bool(spec is not None and spec.opts.get("firstresult"))

    def call_each(self, hook: str, /, **kwargs: Any) -> list[tuple[PluginRecord, Any]]:
        """Call every implementation of ``hook``; failures are recorded, not raised.

        Returns ``(plugin record, result)`` for each implementation that returned normally,
        in call order. A ``firstresult`` hook goes through :meth:`call_first` instead.
        """
        if self.is_firstresult(hook):
            raise HermesError(f"{hook} is a firstresult hook: call it with call_first")
        results = []
        for record, function in self.implementations(hook):
            try:
                results.append((record, function(**kwargs)))
            except Exception as exc:
                self.record_error(record, hook, exc)
        return results

    def call_first(
        self, hook: str, /, *, fail_closed: bool = False, **kwargs: Any
    ) -> FirstResult | None:
        """Ask the implementations of the ``firstresult`` hook ``hook`` in call order until
        one returns something other than ``None``; that answer wins and the rest are not called.

        A failing implementation is recorded against its plugin. By default the next one is
        asked; with ``fail_closed`` the failure ends the walk and is returned as the
        :class:`FirstResult`'s ``error`` (a check that cannot decide must not be overruled by a
        later plugin). Returns ``None`` when no implementation answered.
        """
        if not self.is_firstresult(hook):
            raise HermesError(f"{hook} is not a firstresult hook: call it with call_each")
        for record, function in self.implementations(hook):
            try:
                value = function(**kwargs)
            except Exception as exc:
                self.record_error(record, hook, exc)
                if fail_closed:
                    return FirstResult(record, None, exc)
                continue
            if value is not None:
                return FirstResult(record, value)
        return None

    def has_implementations(self, hook: str) -> bool:
        """Whether any loaded plugin implements ``hook``."""
        return bool(getattr(self.pm.hook, hook).get_hookimpls())

    def record_error(self, record: PluginRecord, hook: str, exc: BaseException) -> None:
        """Remember that ``hook`` of ``record``'s plugin failed with ``exc``."""
        message = f"{hook}: {_describe(exc)}"
        logger = _log()
        logger.warning("plugin %s: %s", record.name, message, exc_info=logger.isEnabledFor(10))
        if len(record.hook_errors) < MAX_RECORDED_ERRORS:
            record.hook_errors.append(message)

    # --- reporting -------------------------------------------------------------------------

    def failures(self) -> list[PluginRecord]:
        """Plugins that failed to load or whose hooks raised."""
        return [r for r in self.records.values() if r.status == "error" or r.hook_errors]

    def list_records(self) -> list[PluginRecord]:
        """Every plugin seen, in load order."""
        return list(self.records.values())
