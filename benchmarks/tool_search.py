"""Tool search (``tools.defer``, docs/tool-search.md): medians over several runs of

- what reaches the model's context with the default toolsets plus 100 MCP tools (seven real
  MCP servers over stdio with realistic schemas, ``tool_search_servers.py``), with deferral and
  without, on each wire format (the request's bytes, less the definitions a native back end
  marks deferred, which the provider keeps out of the context); and with only the default
  toolsets, with and without deferral (no more bytes than before);
- a search over 1,000 tools, and building that catalogue (once per session);
- a scripted model that needs 3 of the 100 tools: the model calls it makes on each wire format
  beyond the 3 calls of the tools themselves (it searches with words, reads the result, and
  calls the tool it found).

The model is the test kit's fake LLM server on loopback, spoken to by the real SDKs.

Usage: python benchmarks/tool_search.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tool_search_servers as servers  # noqa: E402

from hermes_core.loop.agent import Agent  # noqa: E402
from hermes_core.testing import FakeLLM, plugin_manager  # noqa: E402
from hermes_core.tools.catalogue import Catalogue  # noqa: E402
from hermes_hookspecs import Tool  # noqa: E402

DEFAULT_TOOLSETS = [
    "terminal", "file", "memory", "todo", "clarify", "delegation", "session_search", "skills",
]  # fmt: skip
PROMPTS = ["prompt_identity", "prompt_platform", "prompt_environment"]
WIRES = {
    "chat_completions": ("openai", "custom"),
    "codex_responses": ("openai", "custom"),
    "anthropic_messages": ("anthropic", "anthropic"),
}
NEEDED = [  # (words the model searches with, the tool, its arguments)
    ("open a github issue", "mcp_github_create_issue", {"owner": "o", "repo": "r"}),
    ("slow postgres queries", "mcp_postgres_list_slow_queries", {}),
    ("free time slots for a meeting", "mcp_calendar_find_free_slots",
     {"attendees": [{"email": "a@example.com"}], "start": "2026-12-08T09:00:00Z",
      "end": "2026-12-08T17:00:00Z"}),
]  # fmt: skip


def mcp_config() -> dict[str, Any]:
    """The seven servers as ``mcp_servers``."""
    script = str(HERE / "tool_search_servers.py")
    return {name: {"command": sys.executable, "args": [script, name]} for name in servers.SERVERS}


def make_agent(fake: FakeLLM, wire: str, *, mcp: bool, defer: Any) -> Agent:
    plugin, provider = WIRES[wire]
    config: dict[str, Any] = {"tools": {"defer": defer}}
    if provider == "custom":
        config["model"] = {"api_mode": wire}
    if mcp:
        config["mcp_servers"] = mcp_config()
    base = fake.anthropic_base_url if plugin == "anthropic" else fake.openai_base_url
    names = [plugin, *DEFAULT_TOOLSETS, *PROMPTS, *(["mcp"] if mcp else [])]
    return Agent.from_config(
        config,
        provider=provider,
        base_url=base,
        api_key="bench",
        model="claude-bench" if plugin == "anthropic" else "gpt-bench",
        plugins=plugin_manager(names),
    )


def context_bytes(body: dict[str, Any]) -> int:
    """The bytes of a request body that reach the model's context."""
    tools = [t for t in body.get("tools") or [] if not t.get("defer_loading")]
    kept = {**body, "tools": tools}
    if any(t.get("type") == "namespace" for t in tools):  # Responses namespaces
        kept["tools"] = [
            {**t, "tools": [f for f in t["tools"] if not f.get("defer_loading")]}
            if t.get("type") == "namespace"
            else t
            for t in tools
        ]
    return len(json.dumps(kept, ensure_ascii=False, separators=(",", ":")).encode())


def first_request(wire: str, *, mcp: bool, defer: Any) -> dict[str, Any]:
    with FakeLLM("ok") as fake:
        with make_agent(fake, wire, mcp=mcp, defer=defer) as agent:
            agent.chat("hello")
        body: dict[str, Any] = fake.model_requests[0].json
    return body


def bytes_figures(wire: str) -> dict[str, Any]:
    on = first_request(wire, mcp=True, defer={})
    off = first_request(wire, mcp=True, defer=False)
    default_on = first_request(wire, mcp=False, defer={})
    default_off = first_request(wire, mcp=False, defer=False)
    return {
        "with": context_bytes(on),
        "without": context_bytes(off),
        "sent_with": len(json.dumps(on).encode()),
        "default_with": context_bytes(default_on),
        "default_without": context_bytes(default_off),
    }


def thousand_tools() -> list[tuple[Tool, str]]:
    """1,000 tools: the 100 of the servers, ten times over under other server names."""
    out = []
    for copy in range(10):
        for server in servers.SERVERS:
            for spec in servers.tools(server):
                name = f"mcp_{server}{copy}_{spec['name']}"
                tool = Tool(name, spec["description"], spec["inputSchema"], str)
                out.append((tool, f"mcp-{server}{copy}"))
    return out


def search_figures(runs: int) -> dict[str, float]:
    entries = thousand_tools()
    queries = [words for words, _, _ in NEEDED] + ["delete a file", "resolve sentry issue"]
    builds, searches = [], []
    started = time.perf_counter()
    Catalogue(entries).search("the first catalogue of the process", 5)
    cold = time.perf_counter() - started
    for _ in range(runs):
        started = time.perf_counter()
        catalogue = Catalogue(entries)
        catalogue.search("warm up the index", 5)
        builds.append(time.perf_counter() - started)
        for query in queries:
            started = time.perf_counter()
            catalogue.search(query, 5)
            searches.append(time.perf_counter() - started)
    return {
        "cold_ms": cold * 1000,
        "build_ms": statistics.median(builds) * 1000,
        "search_ms": statistics.median(searches) * 1000,
    }


class NeedsThree:
    """A scripted model that needs three tools: it searches with words (the provider's own
    search where the request offers one), reads what came back (tool references, loaded
    tools, or the names in the result's text), and calls what it found."""

    def __init__(self) -> None:
        self.todo = list(NEEDED)
        self.calls = 0

    def __call__(self, request: Any) -> Any:
        self.calls += 1
        if not self.todo:
            return "all three done"
        words, name, args = self.todo[0]
        body = request.json
        tools = json.dumps(body.get("tools"))
        last = self._last_result(body)
        if last is not None and name in last:
            self.todo.pop(0)
            if "tool_reference" in last or "tool_search_output" in last:  # loaded natively
                return {"calls": [{"name": name, "arguments": args}]}
            return {
                "calls": [{"name": "call_tool", "arguments": {"name": name, "arguments": args}}]
            }
        search = "tool_search" if '"type": "tool_search"' in tools else "find_tools"
        return {"calls": [{"name": search, "arguments": {"query": words}}]}

    @staticmethod
    def _last_result(body: dict[str, Any]) -> str | None:
        """The latest tool result of the request, in any of the three formats."""
        items = body.get("messages") or body.get("input") or []
        for item in reversed(items):
            kind = item.get("type")
            if item.get("role") == "tool" or kind in ("function_call_output", "tool_search_output"):
                return json.dumps(item)
            content = item.get("content")
            if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content
            ):
                return json.dumps(item)
        return None


def extra_calls(wire: str) -> int:
    model = NeedsThree()
    with FakeLLM(model) as fake:
        fake.add(*[model] * 12)
        with make_agent(fake, wire, mcp=True, defer={}) as agent:
            answer = agent.chat("do the three things")
        assert answer == "all three done", answer
        assert not fake.errors, fake.errors
    return model.calls - 1 - len(NEEDED)  # less the final answer and the three tool calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"tool search, medians of {args.runs} runs; {servers.count()} MCP tools")
    # first: the agents below leave threads behind that would share the CPU with it
    search = search_figures(args.runs)
    print(
        f"  search over 1,000 tools: {search['search_ms']:.3f} ms a query; "
        f"catalogue built in {search['build_ms']:.1f} ms ({search['cold_ms']:.1f} ms the "
        "first time in a process)"
    )
    for wire in WIRES:
        figures = [bytes_figures(wire) for _ in range(max(1, args.runs // 2))]
        med = {k: statistics.median(f[k] for f in figures) for k in figures[0]}
        share = 100 * med["with"] / med["without"]
        mcp_share = (
            100 * (med["with"] - med["default_with"]) / (med["without"] - med["default_without"])
        )
        print(
            f"  {wire:<19} context bytes: {med['with']:>7,.0f} with deferral, "
            f"{med['without']:>7,.0f} without ({share:.1f} %; the MCP tools' part "
            f"{mcp_share:.1f} %); sent {med['sent_with']:,.0f}; default toolsets only: "
            f"{med['default_with']:,.0f} with, {med['default_without']:,.0f} without"
        )
    for wire in WIRES:
        extras = [extra_calls(wire) for _ in range(max(1, args.runs // 2))]
        print(
            f"  {wire:<19} 3 of 100 tools found and called with {statistics.median(extras):.0f} "
            f"extra model calls ({statistics.median(extras) / len(NEEDED):.1f} a tool)"
        )


if __name__ == "__main__":
    main()
