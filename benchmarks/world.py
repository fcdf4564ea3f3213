"""Time of the world-facing tools against pages served on 127.0.0.1.

- ``web_extract`` of a local page of about 1 MB of HTML (fetch through the guarded client,
  main-content extraction to markdown), median and 90th percentile of ``--runs`` calls;
- ``browser_navigate`` + ``browser_snapshot`` in Debian's Chromium, the first call (browser
  start-up included) and the median of the next ones.

Both tools run through an agent with a scripted model, as the model would call them, so the
figures include the host's dispatch. Nothing leaves the machine.

Usage: python benchmarks/world.py [--runs 10]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hermes_core.testing import ScriptedModel, make_agent, text, tool_call


def big_page(target_bytes: int = 1_000_000) -> bytes:
    """An article of about ``target_bytes`` with navigation, sidebars and comments around it."""
    parts = ["<!doctype html><html><head><title>A long article</title></head><body>"]
    parts.append("<nav>" + " | ".join(f'<a href="/s{i}">Section {i}</a>' for i in range(50)))
    parts.append("</nav><main><article><h1>A long article</h1>")
    i = 0
    while sum(len(p) for p in parts) < target_bytes:
        parts.append(
            f"<h2>Part {i}</h2><p>Paragraph {i} of the article: the alpine moth flies at night"
            " between June and August, above 2000 metres, and feeds on gentian nectar. "
            f'See <a href="/ref/{i}">reference {i}</a>.</p>'
            f"<ul><li>fact {i}a</li><li>fact {i}b</li></ul>"
        )
        i += 1
    parts.append("</article></main><footer>Copyright. Privacy. Cookies.</footer></body></html>")
    return "".join(parts).encode()


@contextmanager
def serve(pages: dict[str, bytes]) -> Iterator[str]:
    """Serve ``pages`` on 127.0.0.1; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            body = pages.get(self.path, b"not found")
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def timed_calls(calls: list[tuple[str, dict[str, Any]]], config: dict[str, Any]) -> list[float]:
    """Seconds each tool call took, run by an agent in one turn: the time from one model call
    to the next (the scripted model answers at once)."""
    model = ScriptedModel(*(tool_call(name, args) for name, args in calls), text("done"))
    marks: list[float] = []
    with make_agent(model=model, plugins=["web", "browser"], config=config) as agent:
        original = agent.client.complete

        def complete(*args: Any, **kwargs: Any) -> Any:
            marks.append(time.perf_counter())
            return original(*args, **kwargs)

        agent.client.complete = complete
        agent.chat("go")
    return [b - a for a, b in zip(marks, marks[1:], strict=False)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    page = big_page()
    config = {"web": {"allow_private": ["127.0.0.1"], "max_chars": 2_000_000}}
    with serve(
        {"/big": page, "/small": b"<html><body><h1>Hi</h1><a href='/big'>big</a></body></html>"}
    ) as url:
        extract = timed_calls([("web_extract", {"urls": [url + "/big"]})] * args.runs, config)
        print(
            f"web_extract of a {len(page) / 1e6:.2f} MB page: median"
            f" {statistics.median(extract) * 1000:.0f} ms, p90"
            f" {sorted(extract)[int(0.9 * (len(extract) - 1))] * 1000:.0f} ms ({args.runs} runs)"
        )
        from hermes_toolset_browser.manager import unavailable

        reason = unavailable({})
        if reason:
            print(f"browser: skipped ({reason})")
            return 0
        calls: list[tuple[str, dict[str, Any]]] = []
        for _ in range(args.runs):
            calls += [("browser_navigate", {"url": url + "/small"}), ("browser_snapshot", {})]
        browser = timed_calls(calls, config)
        pairs = [browser[i] + browser[i + 1] for i in range(0, len(browser) - 1, 2)]
        print(
            f"browser_navigate + browser_snapshot: first {pairs[0] * 1000:.0f} ms (Chromium"
            f" start-up included), then median {statistics.median(pairs[1:]) * 1000:.0f} ms"
            f" ({len(pairs) - 1} runs)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
