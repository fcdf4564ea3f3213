"""The two HTTP libraries a model call could be sent with, side by side: ``urllib3`` (under
``hermes_runtime.http_json.JsonPoster``, what hermes uses) and ``httpx`` (the SDKs' own, one
tuned client per endpoint, HTTP/1.1).

Two figures, medians over ``--runs`` runs, the libraries alternating:

- import: the wall time a fresh interpreter spends importing the library after what a hermes
  process has loaded anyway (``json``, ``ssl``, ``http.client``, ``logging``, ``email``);
- CPU per POST: a JSON body of ``--body-kb`` KiB posted ``--calls`` times over one kept-alive
  connection to a server in another process on 127.0.0.1 (its work not counted), the answer
  read and decoded as JSON.

Usage: python benchmarks/http_clients.py [--runs 5] [--calls 300] [--body-kb 32]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

SERVER = """
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
BODY = json.dumps({"choices": [{"message": {"role": "assistant", "content": "hi " * 300}}]})
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY.encode())
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

PRELOADED = "import json, ssl, http.client, logging, email.parser, socket, select"


def import_seconds(module: str) -> float:
    """Seconds a fresh interpreter takes to import ``module`` after :data:`PRELOADED`."""
    code = f"{PRELOADED}\nimport time\nt = time.perf_counter()\nimport {module}\n"
    code += "print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout)


class Failures:
    """Errors of the hermes poster: raised as they are (none is expected)."""

    def status(self, status: int, body: Any, headers: Any) -> BaseException:
        return RuntimeError(status, body)

    def network(self, exc: BaseException, streaming: bool) -> BaseException:
        return RuntimeError(exc)

    def not_json(self, text: str) -> BaseException:
        return RuntimeError(text)


def senders(port: int, body: dict[str, Any]) -> dict[str, Any]:
    """One function per library that posts ``body`` and decodes the answer."""
    import httpx

    from hermes_runtime.http_json import Endpoint, JsonPoster

    headers = {"Content-Type": "application/json", "Authorization": "Bearer k"}
    poster = JsonPoster(Endpoint(False, "127.0.0.1", port, "/v1"), headers, 30.0, Failures())
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{port}/v1",
        headers=headers,
        timeout=httpx.Timeout(30.0),
        limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
    )

    def with_httpx() -> Any:
        payload = json.dumps(body, separators=(",", ":")).encode()
        return json.loads(client.post("/chat/completions", content=payload).content)

    return {"urllib3": lambda: poster.post("/chat/completions", body), "httpx": with_httpx}


def main() -> None:
    """Print both libraries' figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--body-kb", type=int, default=32)
    args = parser.parse_args()
    imports: dict[str, list[float]] = {"urllib3": [], "httpx": []}
    for _ in range(args.runs):
        for name in imports:
            imports[name].append(import_seconds(name))
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        body = {"model": "m", "messages": [{"role": "user", "content": "x" * 1024}] * args.body_kb}
        send = senders(port, body)
        cpu: dict[str, list[float]] = {name: [] for name in send}
        for post in send.values():
            for _ in range(5):
                post()  # warm: the connection made, lazy set-up done
        for _ in range(args.runs):
            for name, post in send.items():
                started = time.process_time()
                for _ in range(args.calls):
                    post()
                cpu[name].append((time.process_time() - started) / args.calls)
    finally:
        server.kill()
        server.wait()
    print(f"HTTP libraries, {args.runs} runs, {args.calls} POSTs of {args.body_kb} KiB (medians)")
    for name in imports:
        imported = statistics.median(imports[name]) * 1000
        per_call = statistics.median(cpu[name]) * 1000
        print(f"  {name:8} import {imported:6.1f} ms   CPU per POST {per_call:6.3f} ms")


if __name__ == "__main__":
    main()
