"""Search backends of ``web_search``: the protocol a backend implements, the three that ship here
(Tavily and Exa through their official SDKs, a self-hosted SearXNG through its JSON API), and
how backends are found.

A backend is an object with a ``name``, a ``keys`` tuple (the environment variables it reads),
``unavailable(settings)`` and ``search(query, limit, settings)``. Backends are found through the
entry point group ``hermes.web_search`` (the builtin ones too), so a third party adds one with a
small distribution::

    [project.entry-points."hermes.web_search"]
    acme = "acme_search:AcmeBackend"

The entry point names a class (instantiated without arguments) or an instance.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from hermes_hookspecs import ToolError
from hermes_runtime.secrets import mark_secret

ENTRY_POINT_GROUP = "hermes.web_search"
"""The entry point group where search backends are found."""

PREFERRED_ORDER = ("tavily", "exa", "searxng")
"""Which configured backend ``web_search`` uses when ``web.search_backend`` names none; backends
of other distributions come after these, by name."""


@dataclass(frozen=True)
class SearchResult:
    """One hit: ``title``, ``url`` and a ``snippet`` of the page's text."""

    title: str
    url: str
    snippet: str = ""


@dataclass(frozen=True)
class BackendSettings:
    """What a backend is given to run.

    :param options: ``web.backends.<name>`` from config.yaml (``base_url``, ...), ``{}`` if unset.
    :param timeout: seconds a search may take.
    :param environ: the process environment, where ``.env`` keys are.
    """

    options: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = 20.0
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)

    def key(self, variable: str) -> str | None:
        """The value of ``variable`` (an API key), marked secret so no tool result shows it."""
        value = self.environ.get(variable, "").strip()
        if not value:
            return None
        mark_secret(variable, value)
        return value


@runtime_checkable
class SearchBackend(Protocol):
    """What ``web_search`` needs from a backend."""

    name: str
    keys: tuple[str, ...]

    def unavailable(self, settings: BackendSettings) -> str | None:
        """Why this backend cannot search (a missing key, a missing SDK), or ``None``. Quick and
        offline: it runs when the tool list is built."""
        ...

    def search(self, query: str, limit: int, settings: BackendSettings) -> list[SearchResult]:
        """At most ``limit`` results for ``query``; raises :class:`ToolError` in one line."""
        ...


def _missing_sdk(module: str, package: str) -> str | None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        return f"the {package} package is not installed (pip install {package})"
    return None


def _one_line(exc: BaseException) -> str:
    return (" ".join(str(exc).split()) or type(exc).__name__)[:300]


class TavilyBackend:
    """Tavily's search API through its official SDK (``tavily-python``); key ``TAVILY_API_KEY``;
    ``web.backends.tavily.base_url`` points it at another endpoint."""

    name = "tavily"
    keys = ("TAVILY_API_KEY",)

    def unavailable(self, settings: BackendSettings) -> str | None:
        """A missing key or SDK."""
        if not settings.key("TAVILY_API_KEY"):
            return "TAVILY_API_KEY is not set"
        return _missing_sdk("tavily", "tavily-python")

    def search(self, query: str, limit: int, settings: BackendSettings) -> list[SearchResult]:
        """``POST /search`` with ``max_results``."""
        from tavily import TavilyClient  # type: ignore[import-untyped]

        client = TavilyClient(
            api_key=settings.key("TAVILY_API_KEY"),
            api_base_url=settings.options.get("base_url") or None,
        )
        try:
            answer = client.search(query, max_results=limit, timeout=settings.timeout)
        except Exception as exc:  # noqa: BLE001 - the SDK raises its own and requests' errors
            raise ToolError(f"Tavily search failed: {_one_line(exc)}") from None
        return [
            SearchResult(
                title=str(hit.get("title") or ""),
                url=str(hit.get("url") or ""),
                snippet=str(hit.get("content") or ""),
            )
            for hit in answer.get("results", [])[:limit]
        ]


class ExaBackend:
    """Exa's search API through its official SDK (``exa-py``); key ``EXA_API_KEY``;
    ``web.backends.exa.base_url`` points it at another endpoint."""

    name = "exa"
    keys = ("EXA_API_KEY",)

    def unavailable(self, settings: BackendSettings) -> str | None:
        """A missing key or SDK."""
        if not settings.key("EXA_API_KEY"):
            return "EXA_API_KEY is not set"
        return _missing_sdk("exa_py", "exa-py")

    def search(self, query: str, limit: int, settings: BackendSettings) -> list[SearchResult]:
        """``POST /search`` with ``numResults`` and highlights as the snippets."""
        from exa_py import Exa

        client = Exa(
            api_key=settings.key("EXA_API_KEY"),
            base_url=settings.options.get("base_url") or "https://api.exa.ai",
            timeout=settings.timeout,
        )
        try:
            answer = client.search(
                query, num_results=limit, contents={"highlights": {"max_characters": 500}}
            )
        except Exception as exc:  # noqa: BLE001 - the SDK raises its own and httpx's errors
            raise ToolError(f"Exa search failed: {_one_line(exc)}") from None
        results = []
        for hit in answer.results[:limit]:
            highlights = getattr(hit, "highlights", None) or []
            snippet = " … ".join(str(h) for h in highlights) or str(getattr(hit, "text", "") or "")
            results.append(
                SearchResult(title=str(hit.title or ""), url=str(hit.url), snippet=snippet[:1000])
            )
        return results


class SearxngBackend:
    """A self-hosted SearXNG through its JSON API (``/search?format=json``, which the instance
    must allow in its ``search.formats``); URL in ``web.backends.searxng.url`` or
    ``SEARXNG_URL``."""

    name = "searxng"
    keys = ("SEARXNG_URL",)

    def _url(self, settings: BackendSettings) -> str | None:
        url = settings.options.get("url") or settings.environ.get("SEARXNG_URL", "")
        return str(url).strip().rstrip("/") or None

    def unavailable(self, settings: BackendSettings) -> str | None:
        """No URL configured."""
        if not self._url(settings):
            return "no SearXNG instance: set web.backends.searxng.url or SEARXNG_URL"
        return None

    def search(self, query: str, limit: int, settings: BackendSettings) -> list[SearchResult]:
        """``GET /search?q=...&format=json``."""
        import httpx

        base = self._url(settings)
        headers = {"Accept": "application/json"}
        token = settings.key("SEARXNG_TOKEN")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            response = httpx.get(
                f"{base}/search",
                params={"q": query, "format": "json"},
                headers=headers,
                timeout=settings.timeout,
                follow_redirects=True,
            )
        except httpx.HTTPError as exc:
            raise ToolError(f"SearXNG at {base} cannot be reached: {_one_line(exc)}") from None
        if response.status_code == 403:
            raise ToolError(
                f"SearXNG at {base} refused the JSON format (HTTP 403): add json to"
                " search.formats in its settings.yml"
            )
        if response.status_code >= 400:
            raise ToolError(f"SearXNG at {base} answered HTTP {response.status_code}")
        try:
            hits = response.json().get("results", [])
        except ValueError:
            raise ToolError(f"SearXNG at {base} did not answer JSON") from None
        return [
            SearchResult(
                title=str(hit.get("title") or ""),
                url=str(hit.get("url") or ""),
                snippet=str(hit.get("content") or ""),
            )
            for hit in hits[:limit]
            if hit.get("url")
        ]


def discover() -> tuple[dict[str, SearchBackend], list[str]]:
    """Every installed backend by name, and one line for each entry point that failed to load
    or is not a backend."""
    from importlib.metadata import entry_points

    found: dict[str, SearchBackend] = {}
    problems: list[str] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = ep.load()
            backend = loaded() if isinstance(loaded, type) else loaded
        except Exception as exc:  # noqa: BLE001 - a broken backend is reported, not fatal
            problems.append(f"search backend {ep.name!r} failed to load: {_one_line(exc)}")
            continue
        if not isinstance(backend, SearchBackend):
            problems.append(f"search backend {ep.name!r} is not a SearchBackend")
            continue
        if ep.name in found:
            problems.append(f"search backend {ep.name!r} is installed twice; the first is used")
            continue
        found[ep.name] = backend
    return found, problems


def order(names: list[str]) -> list[str]:
    """``names`` in the order backends are tried when none is chosen."""
    known = [n for n in PREFERRED_ORDER if n in names]
    return known + sorted(n for n in names if n not in PREFERRED_ORDER)
