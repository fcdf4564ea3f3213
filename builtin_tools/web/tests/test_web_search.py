"""web_search with each backend against a server on 127.0.0.1 that speaks the backend's real
wire format; choosing a backend; a third-party backend found through its entry point; the
reason a search tool is unavailable."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hermes_toolset_web import choose_backend, web_search

from hermes_core.testing import make_agent, tool_call
from hermes_hookspecs import ToolContext, ToolError


def _json_route(status: int, body: Any) -> Any:
    data = json.dumps(body).encode()

    def route(handler: Any) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    return route


def search(config: dict[str, Any], query: str = "alpine moths", limit: int = 2) -> Any:
    return web_search({"query": query, "limit": limit}, ToolContext(task_id="t", config=config))


@pytest.fixture(autouse=True)
def _no_backend_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TAVILY_API_KEY", "EXA_API_KEY", "SEARXNG_URL", "SEARXNG_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_searxng_json_api(site: Any) -> None:
    site.routes["/search"] = _json_route(
        200,
        {
            "query": "alpine moths",
            "number_of_results": 3,
            "results": [
                {
                    "url": "https://a.example/1",
                    "title": "Moths A",
                    "content": "About A",
                    "engine": "duckduckgo",
                    "score": 1.0,
                    "category": "general",
                },
                {
                    "url": "https://b.example/2",
                    "title": "Moths B",
                    "content": "About B",
                    "engine": "bing",
                    "score": 0.5,
                    "category": "general",
                },
                {
                    "url": "https://c.example/3",
                    "title": "Moths C",
                    "content": "About C",
                    "engine": "bing",
                    "score": 0.1,
                    "category": "general",
                },
            ],
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        },
    )
    result = search({"web": {"backends": {"searxng": {"url": site.url + "/"}}}})
    assert result == {
        "query": "alpine moths",
        "backend": "searxng",
        "results": [
            {"title": "Moths A", "url": "https://a.example/1", "snippet": "About A"},
            {"title": "Moths B", "url": "https://b.example/2", "snippet": "About B"},
        ],
    }
    request = site.seen[-1]
    assert request.method == "GET"
    assert parse_qs(urlsplit(request.path).query) == {"q": ["alpine moths"], "format": ["json"]}


def test_searxng_without_the_json_format_says_how_to_enable_it(
    site: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.routes["/search"] = _json_route(403, {})
    monkeypatch.setenv("SEARXNG_URL", site.url)
    with pytest.raises(ToolError, match="add json to search.formats"):
        search({})


def test_tavily_through_its_sdk(site: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-123456789")
    site.routes["/search"] = _json_route(
        200,
        {
            "query": "alpine moths",
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": [
                {
                    "title": "Alpine moth",
                    "url": "https://t.example/moth",
                    "content": "The alpine moth flies at night.",
                    "score": 0.93,
                    "raw_content": None,
                },
                {
                    "title": "Moth guide",
                    "url": "https://t.example/guide",
                    "content": "A guide.",
                    "score": 0.71,
                    "raw_content": None,
                },
            ],
            "response_time": 0.42,
            "request_id": "123e4567-e89b-12d3-a456-426614174111",
        },
    )
    result = search({"web": {"backends": {"tavily": {"base_url": site.url}}}})
    assert result["backend"] == "tavily"
    assert result["results"][0] == {
        "title": "Alpine moth",
        "url": "https://t.example/moth",
        "snippet": "The alpine moth flies at night.",
    }
    request = site.seen[-1]
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["Authorization"] == "Bearer tvly-test-123456789"
    body = json.loads(request.body)
    assert body["query"] == "alpine moths" and body["max_results"] == 2


def test_tavily_errors_are_one_line(site: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-wrong-key-000")
    site.routes["/search"] = _json_route(401, {"detail": {"error": "Unauthorized: invalid key"}})
    with pytest.raises(ToolError) as failed:
        search({"web": {"backends": {"tavily": {"base_url": site.url}}}})
    assert str(failed.value).startswith("Tavily search failed:") and "\n" not in str(failed.value)


def test_exa_through_its_sdk(site: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXA_API_KEY", "exa-test-key-987654")
    site.routes["/search"] = _json_route(
        200,
        {
            "requestId": "b5947044c4b78efa9552a7c89b306d95",
            "resolvedSearchType": "neural",
            "results": [
                {
                    "id": "https://e.example/moth",
                    "title": "Alpine moths",
                    "url": "https://e.example/moth",
                    "publishedDate": "2026-06-01T00:00:00.000Z",
                    "author": "A. Lepidopterist",
                    "highlights": ["They fly at night."],
                    "highlightScores": [0.8],
                },
            ],
            "searchType": "neural",
            "costDollars": {"total": 0.005},
        },
    )
    result = search({"web": {"backends": {"exa": {"base_url": site.url}}}}, limit=3)
    assert result["backend"] == "exa"
    assert result["results"] == [
        {"title": "Alpine moths", "url": "https://e.example/moth", "snippet": "They fly at night."}
    ]
    request = site.seen[-1]
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["x-api-key"] == "exa-test-key-987654"
    body = json.loads(request.body)
    assert body["query"] == "alpine moths" and body["numResults"] == 3


def test_the_backend_is_chosen_by_config_or_by_the_keys_present(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    none = choose_backend({})
    assert isinstance(none, str) and none.startswith("no web search backend is configured")
    assert "TAVILY_API_KEY" in none and "EXA_API_KEY" in none and "SEARXNG_URL" in none
    monkeypatch.setenv("SEARXNG_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("EXA_API_KEY", "exa-key-123456789")
    chosen = choose_backend({})
    assert not isinstance(chosen, str) and chosen[0].name == "exa"
    # a named backend is that one or none: no silent fall back to another
    named = choose_backend({"web": {"search_backend": "tavily"}})
    assert named == "search backend 'tavily': TAVILY_API_KEY is not set"
    unknown = choose_backend({"web": {"search_backend": "bingo"}})
    assert isinstance(unknown, str) and "'bingo', which is not installed" in unknown


def test_a_third_party_backend_is_found_through_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "acme_search.py").write_text(
        textwrap.dedent(
            """
            from hermes_toolset_web import SearchResult

            class AcmeBackend:
                name = "acme"
                keys = ("ACME_SEARCH_KEY",)

                def unavailable(self, settings):
                    return None if settings.key("ACME_SEARCH_KEY") else "ACME_SEARCH_KEY is not set"

                def search(self, query, limit, settings):
                    return [SearchResult(f"{query} {i}", f"https://acme.example/{i}", "hit")
                            for i in range(limit)]
            """
        )
    )
    info = tmp_path / "acme_search-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-search\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[hermes.web_search]\nacme = acme_search:AcmeBackend\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = {"web": {"search_backend": "acme"}}
    assert choose_backend(config) == "search backend 'acme': ACME_SEARCH_KEY is not set"
    monkeypatch.setenv("ACME_SEARCH_KEY", "acme-key-0123456")
    result = search(config, query="q", limit=3)
    assert result["backend"] == "acme" and len(result["results"]) == 3


def test_tools_list_gives_the_reason_search_is_unavailable(hermes_cli: Any) -> None:
    listing = hermes_cli("tools", "list")
    assert listing.exit_code == 0, listing.stderr
    [line] = [row for row in listing.output.splitlines() if " web_search " in row]
    assert "unavailable: no web search backend is configured" in line
    [extract] = [row for row in listing.output.splitlines() if " web_extract " in row]
    assert "enabled" in extract


def test_the_model_searches_through_the_agent(site: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    site.routes["/search"] = _json_route(
        200, {"results": [{"url": "https://a.example/", "title": "A", "content": "about a"}]}
    )
    monkeypatch.setenv("SEARXNG_URL", site.url)
    agent = make_agent(
        tool_call("web_search", {"query": "a"}), "Found A.", plugins=["web"], config={}
    )
    with agent:
        assert agent.chat("Search a") == "Found A."
    assert "web_search" in agent.client.requests[0].tool_names
    tool_message = [m for m in agent.messages if m["role"] == "tool"][0]
    assert json.loads(tool_message["content"])["results"][0]["url"] == "https://a.example/"


def test_without_a_backend_the_model_is_not_offered_web_search() -> None:
    agent = make_agent("Nothing to search with.", plugins=["web"], config={})
    with agent:
        agent.chat("Search")
    names = agent.client.requests[0].tool_names
    assert "web_search" not in names and "web_extract" in names
