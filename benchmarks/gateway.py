"""Load on the gateway's API server: concurrent conversations, overhead per request, memory.

Three processes, as in production: the test kit's fake model server (answers every request
with ``echo: <the user's message>`` after ``--model-delay`` seconds), the gateway serving the
OpenAI-compatible API against it (this process), and a load client that runs ``--conversations``
conversations at once, each ``--turns`` requests long, continuing its session with the
``X-Hermes-Session-Id`` header. Every answer must be the echo of its own request's message, in
its own session: a lost or crossed message fails the run.

Each run measures the same load twice, one right after the other:

- direct: the load client straight at the fake model server (no gateway), same conversations,
  turns and start times. Its latency minus the scripted delay is what the fake server, the
  client and this machine cost on their own at that load (they share its cores).
- gateway: the load client at the gateway, which asks the fake model server.

Two overheads per request are reported, at p50 and p95:

- ``gateway - delay``: the gateway's latency minus the scripted delay. Everything hermes does is
  in it (HTTP in and out, routing, building the turn's agent, the provider's SDK, the session
  store, the answer), and so is the direct baseline's share.
- ``gateway - direct``: the gateway's percentile minus the direct run's percentile at the same
  load: what putting the gateway in the path adds.

The goal (p95 <= 20 ms) is checked on the first, the stricter one. Gateway CPU per request is
this process's CPU time during the load over the requests served. With ``--spread 0`` (the
default) every conversation sends each message at about the same moment, so the gateway's CPU
work for ``--conversations`` requests queues behind one interpreter: the 95th-percentile request
waits for about 95% of theirs. The report prints the CPU per request that such a queue allows
within the goal next to the measured one. ``--spread S`` starts the conversations at random
moments within ``S`` seconds, as users do.

Prints every run and the median over ``--runs`` runs, and the gateway process's peak RSS.

Usage: python benchmarks/gateway.py [--conversations 50] [--turns 4] [--runs 3]
                                    [--model-delay 0.2] [--spread 0] [--stream]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

KEY = "bench-key"
GOAL_P95_MS = 20.0


# --- the fake model server (a child process) ---------------------------------------------


def model_server(delay: float) -> None:
    """Serve echo answers until stdin closes; print the base URL first."""
    from hermes_core.testing import FakeLLM

    def echo(request: Any) -> dict[str, Any]:
        messages = request.json["messages"]
        last = messages[-1]["content"]
        text = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last)
        return {"text": f"echo: {text.splitlines()[0]}", "delay": delay}

    with FakeLLM() as server:
        server.add(*([echo] * 1_000_000))
        print(server.openai_base_url, flush=True)
        sys.stdin.read()


# --- the load client (a child process) ---------------------------------------------------


async def _conversation(
    session: Any, url: str, number: int, turns: int, stream: bool, start: float
) -> list[dict[str, Any]]:
    await asyncio.sleep(start)
    results = []
    session_id = None
    for turn in range(turns):
        prompt = f"conversation {number} turn {turn} {uuid.uuid4().hex[:8]}"
        headers = {"Authorization": f"Bearer {KEY}"}
        if session_id:
            headers["X-Hermes-Session-Id"] = session_id
        body = {"model": "hermes-agent", "messages": [{"role": "user", "content": prompt}]}
        if stream:
            body["stream"] = True
        started = time.perf_counter()
        async with session.post(f"{url}/chat/completions", json=body, headers=headers) as answer:
            raw = await answer.read()
            status = answer.status
            got_session = answer.headers.get("X-Hermes-Session-Id")
        latency = time.perf_counter() - started
        text = _answer_text(raw, stream) if status == 200 else f"HTTP {status}: {raw[:200]!r}"
        results.append(
            {
                "latency": latency,
                "ok": text == f"echo: {prompt}" and (session_id in (None, got_session)),
                "text": text,
                "expected": f"echo: {prompt}",
            }
        )
        session_id = session_id or got_session
    return results


def _answer_text(raw: bytes, stream: bool) -> str:
    if not stream:
        return json.loads(raw)["choices"][0]["message"]["content"]
    text = ""
    for line in raw.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices") or []:
                text += choice["delta"].get("content") or ""
    return text


async def _load(
    url: str, conversations: int, turns: int, stream: bool, starts: list[float]
) -> dict[str, Any]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        started = time.perf_counter()
        every = await asyncio.gather(
            *(
                _conversation(session, url, n, turns, stream, starts[n])
                for n in range(conversations)
            )
        )
        elapsed = time.perf_counter() - started
    results = [r for conversation in every for r in conversation]
    return {"elapsed": elapsed, "results": results}


def load_client(url: str, turns: int, stream: bool, starts: list[float]) -> None:
    """Run one conversation per start time (seconds after the first) and print the
    measurements as JSON."""
    measured = asyncio.run(_load(url, len(starts), turns, stream, starts))
    print(json.dumps(measured), flush=True)


# --- the gateway (this process) -------------------------------------------------------------


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def _drive(args: argparse.Namespace, url: str, starts: list[float]) -> dict[str, Any]:
    """Run the load client against ``url``; fail on any lost or crossed answer."""
    command = [sys.executable, __file__, "--client", url, "--turns", str(args.turns)]
    command += ["--starts", ",".join(f"{s:.4f}" for s in starts)]
    if args.stream:
        command.append("--stream")
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
    measured = json.loads(done.stdout)
    results = measured["results"]
    bad = [r for r in results if not r["ok"]]
    if bad:
        raise SystemExit(
            f"{len(bad)} of {len(results)} answers to {url} were lost or crossed, e.g. got "
            f"{bad[0]['text']!r} for {bad[0]['expected']!r}"
        )
    return measured


def _overheads(measured: dict[str, Any], delay: float) -> list[float]:
    return [(r["latency"] - delay) * 1000 for r in measured["results"]]


def one_run(args: argparse.Namespace, model_url: str) -> dict[str, float]:
    """The load straight at the fake model server, then through the gateway (served in a
    fresh home) with the same start times; returns the figures of both."""
    from hermes_gateway.hookspecs import PLATFORM_ADAPTERS_HOOK
    from hermes_gateway.serve import GatewayThread, build

    from hermes_core.testing import make_runner

    starts = [random.uniform(0, args.spread) for _ in range(args.conversations)]
    direct = _overheads(_drive(args, model_url, starts), args.model_delay)

    home = Path(tempfile.mkdtemp(prefix="hermes-gateway-bench-"))
    config = {
        "model": {"provider": "custom", "base_url": model_url, "default": "m", "api_key": "x"},
        "toolsets": [],
        "agent": {"api_max_retries": 0},
    }
    runner = make_runner(scripted=False, plugins=["gateway", "openai"], home=home, config=config)
    factories = {n: e.value for n, e in runner.host.registry.named(PLATFORM_ADAPTERS_HOOK).items()}
    gateway_config = {
        "gateway": {
            "max_concurrent_turns": args.conversations,
            "outbox_interval": 0,
            "platforms": {
                "api": {"adapter": "api_server", "port": 0, "key": KEY, "allow_all": True}
            },
        }
    }
    gateway = build(home, gateway_config, runner, factories, lambda line: None)
    served = GatewayThread(gateway, home).start()
    try:
        url = gateway.adapters["api"].url  # type: ignore[attr-defined]
        _warm_up(url)
        cpu_before = _cpu_seconds()
        measured = _drive(args, url, starts)
        cpu = _cpu_seconds() - cpu_before
    finally:
        served.stop()
    overhead = _overheads(measured, args.model_delay)
    requests = len(overhead)
    figures = {
        "requests": requests,
        "throughput": requests / measured["elapsed"],
        "cpu_ms": cpu * 1000 / requests,
    }
    for name, share in (("p50", 0.50), ("p95", 0.95)):
        figures[name] = _percentile(overhead, share)
        figures[f"direct_{name}"] = _percentile(direct, share)
        figures[f"added_{name}"] = figures[name] - figures[f"direct_{name}"]
    return figures


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _warm_up(url: str) -> None:
    """One request first, so that imports done on first use (the provider's SDK) are not
    counted as the first conversation's overhead."""
    import urllib.request

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "warm up"}]})
    request = urllib.request.Request(
        f"{url}/chat/completions",
        data=body.encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        answer.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model-delay", type=float, default=0.2)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument(
        "--spread",
        type=float,
        default=0.0,
        help="seconds over which the conversations start (0: all at the same moment)",
    )
    parser.add_argument("--client", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--starts", default="", help=argparse.SUPPRESS)
    parser.add_argument("--model-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model_server:
        model_server(args.model_delay)
        return
    if args.client:
        starts = [float(s) for s in args.starts.split(",")] if args.starts else [0.0]
        load_client(args.client, args.turns, args.stream, starts)
        return

    server = subprocess.Popen(
        [sys.executable, __file__, "--model-server", "--model-delay", str(args.model_delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        model_url = server.stdout.readline().strip()
        runs = [one_run(args, model_url) for _ in range(args.runs)]
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mode = "streamed" if args.stream else "whole"
    print(
        f"gateway API server, {args.conversations} concurrent conversations x {args.turns} "
        f"turns ({runs[0]['requests']} requests/run, {mode} answers, started within "
        f"{args.spread:g} s), fake model "
        f"{args.model_delay * 1000:.0f} ms/answer, median of {args.runs} runs (cpus: "
        f"{os.cpu_count()}):"
    )
    for run in runs:
        print(
            f"  run: {run['throughput']:6.1f} req/s  gateway-delay p50 {run['p50']:6.1f} "
            f"p95 {run['p95']:6.1f} ms  direct-delay p50 {run['direct_p50']:5.1f} "
            f"p95 {run['direct_p95']:5.1f} ms  CPU {run['cpu_ms']:4.1f} ms/req"
        )

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    p95, cpu = median("p95"), median("cpu_ms")
    print(f"  throughput                {median('throughput'):8.1f} req/s")
    print(f"  overhead p50              {median('p50'):8.1f} ms  (gateway latency - delay)")
    print(
        f"  overhead p95              {p95:8.1f} ms  (goal <= {GOAL_P95_MS:.0f} ms: "
        f"{'met' if p95 <= GOAL_P95_MS else 'NOT met'})"
    )
    print(
        f"  direct p50 / p95          {median('direct_p50'):5.1f} / {median('direct_p95'):.1f} ms"
    )
    print("    (the same load straight at the fake model server, latency - delay)")
    print(
        f"  added p50 / p95           {median('added_p50'):5.1f} / {median('added_p95'):.1f} ms"
        "  (gateway - direct, per percentile)"
    )
    print(f"  gateway CPU               {cpu:8.1f} ms/request")
    if args.spread == 0:
        allowed = GOAL_P95_MS / (0.95 * args.conversations)
        print(
            f"  CPU per request that fits the goal when {args.conversations} requests arrive "
            f"at once: <= {allowed:.2f} ms\n    (the 95th waits for ~95% of the others on one "
            f"interpreter: {0.95 * args.conversations:.0f} x {cpu:.1f} ms = "
            f"{0.95 * args.conversations * cpu:.0f} ms of queue at the measured CPU)"
        )
    print(f"  peak RSS                  {peak_mb:8.1f} MB (the gateway process)")
    print("  lost or crossed messages: 0")


if __name__ == "__main__":
    main()
