"""The browser of the process and one browser context per session: started on first use,
closed when the session ends, when it sits idle too long, and when hermes exits.

Everything here runs on the event loop of the host's async tool handlers; the hooks that close
contexts from other threads hand the work to that loop.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import ToolError

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright, Route

CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
"""Where Debian's (and other distributions') Chromium is looked for."""

QUIET_ARGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--metrics-recording-only",
    "--disable-features=MediaRouter,OptimizationHints,Translate",
)
"""Chromium switches that keep it from calling home (updates, sync, metrics)."""

DEFAULTS: dict[str, Any] = {"timeout": 30.0, "idle_timeout": 600.0, "headless": True}


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name) if isinstance(config, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def find_chromium(config: Mapping[str, Any]) -> str | None:
    """The Chromium executable: ``browser.executable``, else the first of :data:`CANDIDATES`."""
    configured = _section(config, "browser").get("executable")
    if configured:
        path = shutil.which(str(configured))
        return path
    for candidate in CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def unavailable(config: Mapping[str, Any]) -> str | None:
    """Why the browser tools cannot run here, or ``None``; quick and offline."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed (pip install playwright)"
    if find_chromium(config) is None:
        configured = _section(config, "browser").get("executable")
        if configured:
            return f"browser.executable {configured!r} is not an executable"
        return "no Chromium found: install Debian's chromium (apt-get install chromium)"
    return None


def workspace(config: Mapping[str, Any]) -> Path:
    """The folder downloads and screenshots go to: ``file.workspace``, else ``terminal.cwd``,
    else the folder hermes runs in."""
    for section, key in (("file", "workspace"), ("terminal", "cwd")):
        value = _section(config, section).get(key)
        if value:
            return Path(str(value)).expanduser()
    return Path.cwd()


@dataclass
class Session:
    """The browser state of one session: its context, its page, what it downloaded."""

    key: str
    context: BrowserContext
    page: Page
    timeout: float
    downloads_dir: Path
    guard: _RequestGuard
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    downloads: list[str] = field(default_factory=list)
    last_used: float = field(default_factory=time.monotonic)


class BrowserManager:
    """One Chromium per process, one context per session key."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._sessions: dict[str, Session] = {}
        self._start_lock: asyncio.Lock | None = None
        self._exit_registered = False

    @property
    def session_keys(self) -> list[str]:
        """The keys of the open sessions."""
        return list(self._sessions)

    async def _ensure_browser(self, config: Mapping[str, Any]) -> Browser:
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        loop = asyncio.get_running_loop()
        if self.loop is not None and self.loop is not loop:
            raise ToolError("the browser was started on another event loop")
        self.loop = loop
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            reason = unavailable(config)
            if reason:
                raise ToolError(f"the browser cannot start: {reason}")
            from playwright.async_api import Error, async_playwright

            executable = find_chromium(config)
            args = list(QUIET_ARGS)
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                args.append("--no-sandbox")  # Chromium refuses its own sandbox as root
            extra = _section(config, "browser").get("args") or []
            args += [str(a) for a in extra]
            if self._playwright is None:
                self._playwright = await async_playwright().start()
            try:
                self._browser = await self._playwright.chromium.launch(
                    executable_path=executable,
                    args=args,
                    headless=bool(_section(config, "browser").get("headless", True)),
                    timeout=60_000,
                )
            except Error as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else "failed"
                raise ToolError(f"the browser did not start ({executable}): {first}") from None
            if not self._exit_registered:
                atexit.register(self.close_all_from_thread)
                self._exit_registered = True
            return self._browser

    async def session(self, key: str, config: Mapping[str, Any]) -> Session:
        """The session's browser state, created on first use; idle sessions are closed."""
        await self._close_idle(config)
        existing = self._sessions.get(key)
        if existing is not None and not existing.page.is_closed():
            existing.last_used = time.monotonic()
            return existing
        browser = await self._ensure_browser(config)
        settings = _section(config, "browser")
        timeout = float(settings.get("timeout") or DEFAULTS["timeout"])
        downloads_dir = workspace(config) / str(settings.get("downloads_dir") or "downloads")
        context = await browser.new_context(
            accept_downloads=True,
            viewport={"width": 1280, "height": 900},
            service_workers="block",
        )
        context.set_default_timeout(timeout * 1000)
        context.set_default_navigation_timeout(timeout * 1000)
        guard = _RequestGuard(config)
        await context.route("**/*", guard.handle)
        page = await context.new_page()
        state = Session(
            key=key,
            context=context,
            page=page,
            timeout=timeout,
            downloads_dir=downloads_dir,
            guard=guard,
        )
        context.on("page", lambda new_page: _adopt(state, new_page))
        _watch_downloads(state, page)
        self._sessions[key] = state
        return state

    async def close_session(self, key: str) -> bool:
        """Close the context of ``key``; ``False`` when it had none."""
        state = self._sessions.pop(key, None)
        if state is None:
            return False
        try:
            await state.context.close()
        except Exception:  # noqa: BLE001 - the browser may be gone already
            pass
        return True

    async def _close_idle(self, config: Mapping[str, Any]) -> None:
        idle = float(_section(config, "browser").get("idle_timeout") or DEFAULTS["idle_timeout"])
        now = time.monotonic()
        for key, state in list(self._sessions.items()):
            if now - state.last_used > idle and not state.lock.locked():
                await self.close_session(key)

    async def close_all(self) -> None:
        """Close every context, the browser and Playwright."""
        for key in list(self._sessions):
            await self.close_session(key)
        if self._browser is not None:
            try:
                await self._browser.close()
            except Exception:  # noqa: BLE001
                pass
            self._browser = None
        if self._playwright is not None:
            try:
                await self._playwright.stop()
            except Exception:  # noqa: BLE001
                pass
            self._playwright = None

    def _run_from_thread(self, coroutine: Any, timeout: float) -> None:
        loop = self.loop
        if loop is None or loop.is_closed() or not loop.is_running():
            coroutine.close()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # on the browser's own loop: cannot wait for it here
            loop.create_task(coroutine)
            return
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        try:
            future.result(timeout=timeout)
        except Exception:  # noqa: BLE001 - closing is best effort; the driver dies with us
            future.cancel()

    def close_session_from_thread(self, key: str, timeout: float = 10.0) -> None:
        """Close the context of ``key`` from a thread other than the browser's loop."""
        if key in self._sessions:
            self._run_from_thread(self.close_session(key), timeout)

    def close_all_from_thread(self, timeout: float = 10.0) -> None:
        """Close everything from another thread (the session-end hook, ``atexit``)."""
        if self._browser is not None or self._playwright is not None:
            self._run_from_thread(self.close_all(), timeout)


def _adopt(state: Session, page: Page) -> None:
    """A page the site opened (``target=_blank``, ``window.open``) becomes the current one."""
    state.page = page
    _watch_downloads(state, page)


def _watch_downloads(state: Session, page: Page) -> None:
    async def save(download: Any) -> None:
        state.downloads_dir.mkdir(parents=True, exist_ok=True)
        name = Path(download.suggested_filename).name or "download"
        target = state.downloads_dir / name
        stem, suffix, n = target.stem, target.suffix, 1
        while target.exists():
            target = state.downloads_dir / f"{stem}-{n}{suffix}"
            n += 1
        await download.save_as(target)
        state.downloads.append(str(target))

    page.on("download", save)


class _RequestGuard:
    """Every request of a browser context goes through here: only http(s), data, blob and
    about URLs; no loopback, private, link-local or metadata address unless
    ``web.allow_private`` lists it (the rules of the web tools, docs/web.md)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        from hermes_toolset_web.guard import AllowList

        allow = _section(config, "web").get("allow_private")
        self.allow = AllowList.parse(allow if isinstance(allow, Sequence) else None)
        self._verdicts: dict[tuple[str, int], str | None] = {}
        self.refused: list[str] = []

    async def problem(self, url: str) -> str | None:
        """Why ``url`` is refused, or ``None``."""
        from urllib.parse import urlsplit

        from hermes_toolset_web.guard import WebRefused, check_url, checked_addresses

        scheme = urlsplit(url).scheme.lower()
        if scheme in ("data", "blob", "about"):
            return None
        try:
            parts = check_url(url)
        except ToolError as exc:
            return str(exc)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        key = (host, port)
        if key not in self._verdicts:
            loop = asyncio.get_running_loop()
            try:
                await loop.run_in_executor(None, checked_addresses, host, port, self.allow)
                self._verdicts[key] = None
            except WebRefused as exc:
                self._verdicts[key] = str(exc)
            except ToolError:
                self._verdicts[key] = None  # unresolvable: let Chromium fail on its own
        return self._verdicts[key]

    async def handle(self, route: Route) -> None:
        """Continue the request or abort it."""
        problem = await self.problem(route.request.url)
        if problem is None:
            await route.continue_()
        else:
            self.refused.append(problem)
            await route.abort("blockedbyclient")


MANAGER = BrowserManager()
"""The process's browser."""
