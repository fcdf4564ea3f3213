"""A real browser for hermes: toolset ``browser``, driving Debian's Chromium through Playwright.
See docs/browser.md.

The model navigates, reads the page as an accessibility tree whose elements carry references
(``[ref=e5]``), and acts on those references. Each session has its own browser context (cookies,
storage, pages), closed when the session ends, after ``browser.idle_timeout`` of disuse and when
hermes exits. Playwright is imported by the first tool call, never at start-up.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from hermes_hookspecs import (
    ConfigKey,
    ConfigSection,
    Tool,
    ToolContext,
    ToolError,
    ToolOutput,
    Toolset,
    hookimpl,
)

from .manager import MANAGER, Session, unavailable, workspace

__version__ = "0.1.0"

__all__ = ["MANAGER", "TOOLS", "hermes_register_config", "hermes_register_configured_toolsets"]

MAX_SNAPSHOT_CHARS = 30_000
KEYS_HINT = "Enter, Tab, Escape, ArrowDown, PageDown, Backspace, Control+A..."


def _key(ctx: ToolContext) -> str:
    return ctx.session_id or ctx.task_id


async def _state(ctx: ToolContext) -> Session:
    return await MANAGER.session(_key(ctx), ctx.config)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return first[:300]


async def _describe(state: Session, *, snapshot: bool = True) -> dict[str, Any]:
    """Where the page is, what it shows and what it downloaded."""
    page = state.page
    result: dict[str, Any] = {"url": _shown(page.url), "title": await page.title()}
    if snapshot:
        tree = await page.aria_snapshot(mode="ai")
        if len(tree) > MAX_SNAPSHOT_CHARS:
            tree = (
                tree[:MAX_SNAPSHOT_CHARS]
                + f"\n[snapshot cut at {MAX_SNAPSHOT_CHARS} of {len(tree)} characters;"
                " scroll or act on what is shown]"
            )
        result["snapshot"] = tree
    if state.downloads:
        result["downloads"] = list(state.downloads)
        state.downloads.clear()
    if state.guard.refused:
        result["blocked_requests"] = sorted(set(state.guard.refused))[:5]
        state.guard.refused.clear()
    return result


def _shown(url: str) -> str:
    from hermes_toolset_web.guard import redact_url

    return redact_url(url)


async def _locator(state: Session, ref: str) -> Any:
    ref = str(ref or "").strip().strip("[]").removeprefix("ref=")
    if not ref:
        raise ToolError("ref is empty: give an element reference from browser_snapshot (e5)")
    locator = state.page.locator(f"aria-ref={ref}")
    try:
        count = await locator.count()
    except Exception:  # noqa: BLE001 - a malformed ref
        count = 0
    if count == 0:
        raise ToolError(
            f"no element [ref={ref}] on the page; the page changed or the ref is wrong:"
            " take a new browser_snapshot"
        )
    return locator


async def _act(ctx: ToolContext, action: Callable[[Session], Any], what: str) -> dict[str, Any]:
    """Run ``action`` on the session's page under its lock, wait for a navigation it started,
    and describe the page; errors become one-line ToolErrors."""
    from playwright.async_api import Error, TimeoutError

    state = await _state(ctx)
    async with state.lock:
        state.last_used = time.monotonic()
        watch = _NavigationWatch(state.page)
        try:
            await action(state)
            await watch.settle(min(10.0, state.timeout))
            return await _describe(state)
        except ToolError:
            raise
        except TimeoutError:
            raise ToolError(
                f"{what} timed out after {state.timeout:g}s (browser.timeout)"
            ) from None
        except Error as exc:
            raise ToolError(f"{what} failed: {_one_line(exc)}") from None
        finally:
            watch.stop()


_PAGE_TURN = "() => new Promise(done => setTimeout(done, 0))"
"""Resolves once the page has run the tasks queued before it."""


class _NavigationWatch:
    """Notices a navigation an action starts (a link, a form submitted with Enter), so the
    snapshot is taken of the new page, not of the old one."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.pending = 0
        self.loaded = 0
        page.on("request", self._request)
        page.on("requestfailed", self._ended)
        page.on("download", self._ended)
        page.on("domcontentloaded", self._loaded)

    def _request(self, request: Any) -> None:
        if request.is_navigation_request() and request.frame == self.page.main_frame:
            self.pending += 1

    def _ended(self, *_: Any) -> None:
        self.pending = max(0, self.pending - 1)

    def _loaded(self, *_: Any) -> None:
        self.loaded += 1

    async def settle(self, limit: float) -> None:
        """Give the page a moment; if it started navigating, wait for the new document."""
        import asyncio

        from playwright.async_api import Error

        # What the action queued in the page (a form submitted on Enter, a click's handler)
        # runs before this round trip returns, however loaded the machine: a fixed pause alone
        # could take the snapshot before the navigation starts.
        try:
            await asyncio.wait_for(self.page.evaluate(_PAGE_TURN), timeout=min(1.0, limit))
        except (TimeoutError, Error):
            pass  # the page went away meanwhile (a navigation), or is busy: look below
        await asyncio.sleep(0.05)
        deadline = time.monotonic() + limit
        while self.pending and not self.loaded and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    def stop(self) -> None:
        """Stop listening."""
        self.page.remove_listener("request", self._request)
        self.page.remove_listener("requestfailed", self._ended)
        self.page.remove_listener("download", self._ended)
        self.page.remove_listener("domcontentloaded", self._loaded)


async def browser_navigate(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Open a URL in the session's page and return its snapshot."""
    url = str(args.get("url") or "").strip()
    if not url:
        raise ToolError("url is empty")
    if "://" not in url and not url.startswith(("about:", "data:")):
        url = "https://" + url
    state = await _state(ctx)
    problem = await state.guard.problem(url)
    if problem:
        raise ToolError(problem)

    statuses: list[int] = []

    async def go(state: Session) -> None:
        response = await state.page.goto(url, wait_until="domcontentloaded")
        if response is not None and response.status >= 400:
            statuses.append(response.status)

    result = await _act(ctx, go, f"navigating to {_shown(url)}")
    if statuses:
        result["status"] = statuses[0]
    return result


async def browser_snapshot(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """The page's accessibility tree with element references."""
    return await _act(ctx, lambda state: _nothing(), "taking a snapshot")


async def _nothing() -> None:
    return None


async def browser_click(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Click the element with reference ``ref``."""

    async def click(state: Session) -> None:
        await (await _locator(state, args.get("ref", ""))).click()

    return await _act(ctx, click, f"clicking [ref={args.get('ref')}]")


async def browser_type(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Fill a text field with ``text``; press Enter after when ``submit``."""

    async def type_text(state: Session) -> None:
        locator = await _locator(state, args.get("ref", ""))
        await locator.fill(str(args.get("text", "")))
        if args.get("submit"):
            await locator.press("Enter")

    return await _act(ctx, type_text, f"typing into [ref={args.get('ref')}]")


async def browser_press(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Press a key (``Enter``, ``Tab``, ``Control+A``...) in the focused element."""
    key = str(args.get("key") or "").strip()
    if not key:
        raise ToolError(f"key is empty: {KEYS_HINT}")

    async def press(state: Session) -> None:
        await state.page.keyboard.press(key)

    return await _act(ctx, press, f"pressing {key}")


async def browser_scroll(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Scroll the page up or down by about one screen (``amount`` screens)."""
    direction = str(args.get("direction") or "down")
    if direction not in ("up", "down"):
        raise ToolError("direction must be up or down")
    screens = float(args.get("amount") or 1)

    async def scroll(state: Session) -> None:
        height = (state.page.viewport_size or {"height": 900})["height"]
        delta = height * screens * (1 if direction == "down" else -1)
        await state.page.mouse.wheel(0, delta)
        await state.page.wait_for_timeout(150)

    return await _act(ctx, scroll, f"scrolling {direction}")


async def browser_back(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Go back one page in the history."""

    async def back(state: Session) -> None:
        response = await state.page.go_back(wait_until="domcontentloaded")
        if response is None and state.page.url in ("", "about:blank"):
            raise ToolError("there is no previous page")

    return await _act(ctx, back, "going back")


async def browser_get_images(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """The images of the page: URL, alt text and displayed size."""
    state = await _state(ctx)
    async with state.lock:
        images = await state.page.evaluate(
            """() => Array.from(document.images).map(img => ({
                src: img.currentSrc || img.src, alt: img.alt || "",
                width: img.naturalWidth, height: img.naturalHeight,
                visible: img.getBoundingClientRect().width > 0 }))"""
        )
    shown = [
        {**image, "src": _shown(str(image["src"]))[:500]} for image in images if image.get("src")
    ]
    return {"url": _shown(state.page.url), "count": len(shown), "images": shown[:100]}


async def browser_screenshot(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
    """Save a PNG screenshot of the page (``full_page`` for the whole length) in the
    workspace's ``screenshots`` folder; the result names its path and shows the model the
    image."""
    state = await _state(ctx)
    folder = workspace(ctx.config) / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    target = (
        folder / f"screenshot-{time.strftime('%Y%m%d-%H%M%S')}-{time.monotonic_ns() % 10**6}.png"
    )
    async with state.lock:
        await state.page.screenshot(path=str(target), full_page=bool(args.get("full_page")))
    facts = {"url": _shown(state.page.url), "path": str(target), "bytes": target.stat().st_size}
    return ToolOutput(json.dumps(facts), images=[target])


async def browser_close(args: dict[str, Any], ctx: ToolContext) -> str:
    """Close this session's browser context (pages, cookies, storage)."""
    closed = await MANAGER.close_session(_key(ctx))
    return "closed the browser" if closed else "the browser was not open"


def _tool(
    name: str,
    description: str,
    handler: Any,
    properties: dict[str, Any] | None = None,
    required: list[str] | None = None,
) -> Tool:
    return Tool(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": properties or {},
            **({"required": required} if required else {}),
        },
        handler=handler,
        timeout=120,
    )


REF = {"type": "string", "description": "an element reference from the snapshot, e.g. e5"}

TOOLS = [
    _tool(
        "browser_navigate",
        "Open a URL in the browser and return the page's accessibility snapshot, where each"
        " element has a reference ([ref=e5]) for browser_click and browser_type.",
        browser_navigate,
        {"url": {"type": "string", "description": "http(s) URL"}},
        ["url"],
    ),
    _tool(
        "browser_snapshot",
        "The current page as an accessibility tree with element references.",
        browser_snapshot,
    ),
    _tool(
        "browser_click",
        "Click an element by its reference; returns the new snapshot.",
        browser_click,
        {"ref": REF},
        ["ref"],
    ),
    _tool(
        "browser_type",
        "Fill a text field (replacing its text) by its reference; submit=true presses Enter.",
        browser_type,
        {"ref": REF, "text": {"type": "string"}, "submit": {"type": "boolean"}},
        ["ref", "text"],
    ),
    _tool(
        "browser_press",
        f"Press a key in the focused element: {KEYS_HINT}",
        browser_press,
        {"key": {"type": "string"}},
        ["key"],
    ),
    _tool(
        "browser_scroll",
        "Scroll the page up or down by `amount` screens (default 1).",
        browser_scroll,
        {
            "direction": {"type": "string", "enum": ["up", "down"]},
            "amount": {"type": "number", "minimum": 0.1, "maximum": 20},
        },
        ["direction"],
    ),
    _tool("browser_back", "Go back to the previous page.", browser_back),
    _tool(
        "browser_get_images",
        "List the page's images: URL, alt text and size.",
        browser_get_images,
    ),
    _tool(
        "browser_screenshot",
        "Take a PNG screenshot of the page: you are shown the image, and it is saved in the"
        " workspace (the result gives its path).",
        browser_screenshot,
        {"full_page": {"type": "boolean"}},
    ),
    _tool("browser_close", "Close the browser (its pages, cookies and storage).", browser_close),
]


@hookimpl
def hermes_register_configured_toolsets(
    config: Mapping[str, Any], register: Callable[[Toolset], None]
) -> None:
    """Register the ``browser`` toolset; available where Playwright and Chromium are."""

    def check() -> bool | str:
        return unavailable(config) or True

    tools = [dataclasses.replace(tool, check=check) for tool in TOOLS]
    register(Toolset(name="browser", description="Use web sites in a real browser", tools=tools))


@hookimpl
def hermes_session_end(session: Any) -> None:
    """Close the session's browser context."""
    MANAGER.close_session_from_thread(str(getattr(session, "id", "")))


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``browser.*``."""
    register(
        ConfigSection(
            "browser",
            [
                ConfigKey(
                    "executable",
                    "string",
                    doc="the Chromium to drive (unset: /usr/bin/chromium and the like)",
                ),
                ConfigKey(
                    "timeout",
                    "number",
                    default=30.0,
                    doc="seconds a navigation or an action may take",
                    minimum=0,
                    exclusive_minimum=True,
                ),
                ConfigKey(
                    "idle_timeout",
                    "number",
                    default=600.0,
                    doc="seconds after which an unused session's browser context is closed",
                    minimum=0,
                    exclusive_minimum=True,
                ),
                ConfigKey("headless", "boolean", default=True, doc="run without a window"),
                ConfigKey(
                    "args",
                    "array",
                    items="string",
                    default=[],
                    doc="extra Chromium switches",
                ),
                ConfigKey(
                    "downloads_dir",
                    "string",
                    default="downloads",
                    doc="where downloads land, relative to the workspace",
                ),
            ],
            doc="the browser tools",
        )
    )
