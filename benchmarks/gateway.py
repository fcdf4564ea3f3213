"""Load on the gateway's API server: concurrent conversations, overhead per request, memory.

Three processes, as in production: the test kit's fake model server (answers every request
with ``echo: <the user's message>`` after ``--model-delay`` seconds), the gateway serving the
OpenAI-compatible API against it (``hermes gateway run`` in a fresh home, with every installed
plugin as a user's install loads them, or only ``--plugins a,b``; with each worker count of
``--workers``, 1 and 2 by default), and a load client that runs ``--conversations``
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
the CPU time of the gateway's processes (the supervisor and its workers) during the load over
the requests served (goal: <= 5 ms). With ``--spread 0`` (the default) every conversation sends
each message at about the same moment, so the gateway's CPU work for ``--conversations``
requests queues behind its interpreters: the 95th-percentile request waits for about 95% of
theirs, divided among the workers. The report prints the CPU per request that such a queue
allows within the goal next to the measured one. ``--spread S`` starts the conversations at
random moments within ``S`` seconds, as users do.

Prints every run and the median over ``--runs`` runs (the worker counts interleaved), the
largest gateway process's peak RSS, and the throughput of each worker count over the first's.

Usage: python benchmarks/gateway.py [--conversations 50] [--turns 4] [--runs 3] [--workers 1,2]
                                    [--model-delay 0.2] [--spread 0] [--stream] [--plugins a,b]
                                    [--profile DIR] [--people N]

``--people N`` configures N people in ``gateway.users`` (in 5 groups), and conversation K is
person K modulo N (each person's own workspace, scope and sessions); without it every
conversation is the one guest ``api``, as before people existed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
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
GOAL_CPU_MS = 5.0


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
    session: Any, url: str, number: int, turns: int, stream: bool, start: float, people: int = 0
) -> list[dict[str, Any]]:
    await asyncio.sleep(start)
    results = []
    session_id = None
    for turn in range(turns):
        prompt = f"conversation {number} turn {turn} {uuid.uuid4().hex[:8]}"
        headers = {"Authorization": f"Bearer {KEY}"}
        if session_id:
            headers["X-Hermes-Session-Id"] = session_id
        body: dict[str, Any] = {
            "model": "hermes-agent",
            "messages": [{"role": "user", "content": prompt}],
        }
        if people:
            body["user"] = f"person{number % people:03d}"
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
    url: str, conversations: int, turns: int, stream: bool, starts: list[float], people: int = 0
) -> dict[str, Any]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        started = time.perf_counter()
        every = await asyncio.gather(
            *(
                _conversation(session, url, n, turns, stream, starts[n], people)
                for n in range(conversations)
            )
        )
        elapsed = time.perf_counter() - started
    results = [r for conversation in every for r in conversation]
    return {"elapsed": elapsed, "results": results}


def load_client(url: str, turns: int, stream: bool, starts: list[float], people: int = 0) -> None:
    """Run one conversation per start time (seconds after the first) and print the
    measurements as JSON; with ``people``, conversation N is person N modulo ``people``."""
    measured = asyncio.run(_load(url, len(starts), turns, stream, starts, people))
    print(json.dumps(measured), flush=True)


# --- the gateway (this process) -------------------------------------------------------------


def people_section(count: int) -> dict[str, Any]:
    """``gateway.users`` with ``count`` people (``person000``...) in 5 groups (one shares its
    sessions, each sets toolsets), for ``--people``."""
    groups = {
        f"group{g}": {"share_sessions": g == 0, "toolsets": ["file", "memory", "todo"][: 1 + g % 3]}
        for g in range(5)
    }
    users = {
        f"person{n:03d}": {"ids": [f"api:person{n:03d}"], "groups": [f"group{n % 5}"]}
        for n in range(count)
    }
    return {"users": users, "groups": groups}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def _drive(args: argparse.Namespace, url: str, starts: list[float]) -> dict[str, Any]:
    """Run the load client against ``url``; fail on any lost or crossed answer."""
    command = [sys.executable, __file__, "--client", url, "--turns", str(args.turns)]
    command += ["--starts", ",".join(f"{s:.4f}" for s in starts)]
    command += ["--people", str(args.people)]
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


class ServedGateway:
    """``hermes gateway run`` of ``workers`` processes in a fresh home, serving the API against
    the fake model server; its CPU time is the supervisor's and its workers' (from /proc)."""

    def __init__(self, args: argparse.Namespace, model_url: str, workers: int) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="hermes-gateway-bench-"))
        self.profile = args.profile
        config = {
            "model": {"provider": "custom", "base_url": model_url, "default": "m", "api_key": "x"},
            "toolsets": [],
            "agent": {"api_max_retries": 0},
            "gateway": {
                "workers": workers,
                "max_concurrent_turns": args.conversations,
                "outbox_interval": 0,
                "platforms": {
                    "api": {"adapter": "api_server", "port": 0, "key": KEY, "allow_all": True}
                },
            },
        }
        if args.people:
            config["gateway"].update(people_section(args.people))
        (self.home / "config.yaml").write_text(json.dumps(config))
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
        env["HERMES_HOME"] = str(self.home)
        if args.plugins:
            env["HERMES_PLUGINS"] = args.plugins
        code = "import sys; from hermes_core.cli import main; sys.exit(main())"
        if args.profile:
            env["HERMES_BENCH_PROFILE"] = args.profile
            only = "HERMES_BENCH_PROFILE_THREADS_ONLY"
            env[only] = os.environ.get(only, "")
            harness = str(Path(__file__).with_name("gateway_profile.py"))
            code = f"import runpy; runpy.run_path({harness!r}, run_name='__main__')"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, "gateway", "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = self._wait_for_url()

    def _wait_for_url(self) -> str:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            found = re.search(r" at (http://\S+/v1)", line)
            if found:
                return found.group(1)
        raise SystemExit(f"the gateway did not start (exit code {self.process.wait()})")

    def pids(self) -> list[int]:
        """The gateway's process (the supervisor, with workers) and its workers."""
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [pid, *(int(c) for c in children)]

    def signal_workers(self, signum: int) -> None:
        """Send ``signum`` to the processes that serve (the workers, or the one gateway)
        when profiling; a no-op otherwise."""
        if not self.profile:
            return
        pids = self.pids()
        for pid in pids[1:] or pids:
            os.kill(pid, signum)
        time.sleep(0.5)

    def cpu_seconds(self) -> float:
        """CPU time of the gateway's processes so far."""
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in self.pids():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / ticks

    def peak_rss_mb(self) -> float:
        """The largest peak resident set among the gateway's processes."""
        peaks = [0.0]
        for pid in self.pids():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(int(line.split()[1]) / 1024)
        return max(peaks)

    def stop(self) -> None:
        """Shut the gateway down as SIGTERM does."""
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()


def one_run(args: argparse.Namespace, model_url: str, workers: int) -> dict[str, float]:
    """The load straight at the fake model server, then through a gateway of ``workers``
    processes (in a fresh home) with the same start times; returns the figures of both."""
    starts = [random.uniform(0, args.spread) for _ in range(args.conversations)]
    direct = _overheads(_drive(args, model_url, starts), args.model_delay)
    gateway = ServedGateway(args, model_url, workers)
    try:
        # each worker's first turns import the provider's SDK: not the load's overhead
        _drive(argparse.Namespace(**{**vars(args), "turns": 2}), gateway.url, starts)
        gateway.signal_workers(signal.SIGUSR1)  # start profiling (with --profile)
        cpu_before = gateway.cpu_seconds()
        measured = _drive(args, gateway.url, starts)
        cpu = gateway.cpu_seconds() - cpu_before
        gateway.signal_workers(signal.SIGUSR2)  # write the profile (with --profile)
        peak = gateway.peak_rss_mb()
    finally:
        gateway.stop()
    overhead = _overheads(measured, args.model_delay)
    requests = len(overhead)
    figures = {
        "requests": requests,
        "throughput": requests / measured["elapsed"],
        "cpu_ms": cpu * 1000 / requests,
        "peak_mb": peak,
    }
    for name, share in (("p50", 0.50), ("p95", 0.95)):
        figures[name] = _percentile(overhead, share)
        figures[f"direct_{name}"] = _percentile(direct, share)
        figures[f"added_{name}"] = figures[name] - figures[f"direct_{name}"]
    return figures


def _report(args: argparse.Namespace, workers: int, runs: list[dict[str, float]]) -> None:
    """Print the runs with ``workers`` processes and their medians."""
    print(f"  {workers} worker(s):")
    for run in runs:
        print(
            f"    run: {run['throughput']:6.1f} req/s  gateway-delay p50 {run['p50']:6.1f} "
            f"p95 {run['p95']:6.1f} ms  direct-delay p50 {run['direct_p50']:5.1f} "
            f"p95 {run['direct_p95']:5.1f} ms  CPU {run['cpu_ms']:4.1f} ms/req"
        )

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    p95, cpu = median("p95"), median("cpu_ms")
    print(f"    throughput              {median('throughput'):8.1f} req/s")
    print(f"    overhead p50            {median('p50'):8.1f} ms  (gateway latency - delay)")
    print(
        f"    overhead p95            {p95:8.1f} ms  (goal <= {GOAL_P95_MS:.0f} ms: "
        f"{'met' if p95 <= GOAL_P95_MS else 'NOT met'})"
    )
    print(
        f"    direct p50 / p95        {median('direct_p50'):5.1f} / {median('direct_p95'):.1f} ms"
        "  (the same load straight at the fake model server, latency - delay)"
    )
    print(
        f"    added p50 / p95         {median('added_p50'):5.1f} / {median('added_p95'):.1f} ms"
        "  (gateway - direct, per percentile)"
    )
    print(
        f"    gateway CPU             {cpu:8.1f} ms/request  (goal <= {GOAL_CPU_MS:.0f} ms: "
        f"{'met' if cpu <= GOAL_CPU_MS else 'NOT met'}; all its processes)"
    )
    if args.spread == 0:
        allowed = GOAL_P95_MS * workers / (0.95 * args.conversations)
        print(
            f"    CPU per request that fits the p95 goal when {args.conversations} requests "
            f"arrive at once on {workers} interpreter(s): <= {allowed:.2f} ms"
        )
    print(f"    peak RSS                {median('peak_mb'):8.1f} MB (the largest process)")


def main() -> None:
    """Measure the gateway with each worker count of ``--workers`` and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model-delay", type=float, default=0.2)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument(
        "--workers", default="1,2", help="the worker counts to measure (comma-separated)"
    )
    parser.add_argument(
        "--plugins",
        default="",
        help="load only these plugins (comma-separated entry point names; default: every "
        "installed one, as a user's install does)",
    )
    parser.add_argument(
        "--spread",
        type=float,
        default=0.0,
        help="seconds over which the conversations start (0: all at the same moment)",
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        default="",
        help="profile each serving process under the load (yappi, CPU clock, every thread) "
        "and write DIR/<pid>.pstat; the CPU figures then include the profiler's cost",
    )
    parser.add_argument(
        "--people",
        type=int,
        default=0,
        help="configure this many people in gateway.users (5 groups), each conversation one of "
        "them (0: every conversation is the one guest `api`, as before people existed)",
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
        load_client(args.client, args.turns, args.stream, starts, args.people)
        return

    counts = [int(w) for w in args.workers.split(",")]
    server = subprocess.Popen(
        [sys.executable, __file__, "--model-server", "--model-delay", str(args.model_delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    runs: dict[int, list[dict[str, float]]] = {w: [] for w in counts}
    try:
        assert server.stdout is not None
        model_url = server.stdout.readline().strip()
        for _ in range(args.runs):  # interleaved, so that a slower moment hits every count
            for workers in counts:
                runs[workers].append(one_run(args, model_url, workers))
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)
    mode = "streamed" if args.stream else "whole"
    plugins = args.plugins or "every installed plugin"
    print(
        f"gateway API server ({plugins}), {args.conversations} concurrent conversations x "
        f"{args.turns} turns ({counts and runs[counts[0]][0]['requests']} requests/run, {mode} "
        f"answers, started within {args.spread:g} s), fake model "
        f"{args.model_delay * 1000:.0f} ms/answer, median of {args.runs} runs (cpus: "
        f"{os.cpu_count()}):"
    )
    for workers in counts:
        _report(args, workers, runs[workers])
    if len(counts) > 1:
        base = statistics.median(r["throughput"] for r in runs[counts[0]])
        for workers in counts[1:]:
            scaled = statistics.median(r["throughput"] for r in runs[workers]) / base
            print(f"  throughput with {workers} workers / {counts[0]}: {scaled:.2f}x")
    print("  lost or crossed messages: 0")


if __name__ == "__main__":
    main()
