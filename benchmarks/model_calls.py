"""CPU per model call in a long-running process, for each provider and each of its transports.

A gateway or a resident process makes many model calls from one process: what a call costs
there is the provider's client (building the request, sending it, reading and converting the
answer), not the SDK's import. Each measurement is a fresh child process that builds one model
client against the test kit's fake LLM server (run by this process, so its work is not
counted), makes a few calls to warm up, then ``--calls`` calls, and prints the CPU time and wall
time per call. Each provider is measured over its own HTTP connections and through its SDK's
HTTP client (the provider's ``HERMES_*_HTTP=sdk`` switch), whole and streamed answers, the
transports alternating run by run so that both see the same load; the figures are medians over
``--runs`` runs, and the ratio of each pair is the median of the paired ratios.

Usage: python benchmarks/model_calls.py [--runs 5] [--calls 300] [--providers openai,anthropic]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from hermes_core.testing import FakeLLM, text

SWITCHES = {"openai": "HERMES_OPENAI_HTTP", "anthropic": "HERMES_ANTHROPIC_HTTP"}
WARM_UP = 5


def child(provider: str, base_url: str, calls: int, stream: bool) -> None:
    """Make ``calls`` model calls (after a warm-up) and print CPU and wall seconds per call."""
    from hermes_hookspecs import ModelRequest, ProviderSettings

    if provider == "anthropic":
        from hermes_provider_anthropic import create_client as create_anthropic

        client: Any = create_anthropic(
            ProviderSettings(
                provider="anthropic",
                model="bench",
                base_url=base_url,
                api_key="k",
                api_mode="anthropic_messages",
                timeout=30.0,
            )
        )
    else:
        from hermes_provider_openai import create_client as create_openai

        client = create_openai(
            ProviderSettings(
                provider="custom",
                model="bench",
                base_url=base_url,
                api_mode="chat_completions",
                timeout=30.0,
            )
        )
    messages = [
        {"role": "system", "content": "You are a benchmark."},
        {"role": "user", "content": "Say something."},
    ]

    def call() -> None:
        request = ModelRequest(model="bench", messages=messages, stream=stream)
        answer = client.complete(request).message.get("content")
        if not answer:
            raise SystemExit(f"no answer: {answer!r}")

    for _ in range(WARM_UP):
        call()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        call()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(json.dumps({"cpu": cpu / calls, "wall": wall / calls}))


def measure(
    llm: FakeLLM, provider: str, transport: str, stream: bool, calls: int
) -> dict[str, float]:
    """One child's figures for ``provider`` over ``transport`` (``own`` or ``sdk``)."""
    llm.add(*(text(f"answer {n}") for n in range(calls + WARM_UP)))
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES.values()}
    if transport == "sdk":
        env[SWITCHES[provider]] = "sdk"
    base_url = llm.anthropic_base_url if provider == "anthropic" else llm.openai_base_url
    argv = [sys.executable, __file__, "--child", provider, base_url, str(calls)]
    if stream:
        argv.append("--stream")
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{provider} over {transport} failed: {out.stderr.strip()}")
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), "--stream" in sys.argv[5:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--providers", default="openai,anthropic")
    args = parser.parse_args()
    providers = [p for p in args.providers.split(",") if p]
    cases = [(p, s) for p in providers for s in (False, True)]
    results: dict[tuple[str, bool, str], list[dict[str, float]]] = {}
    with FakeLLM() as llm:
        for _ in range(args.runs):
            for provider, stream in cases:
                for transport in ("own", "sdk"):
                    figures = measure(llm, provider, transport, stream, args.calls)
                    results.setdefault((provider, stream, transport), []).append(figures)
    print(f"model calls in one process, {args.calls} calls per run, medians of {args.runs} runs")
    print(f"  {'provider':<10}{'answer':<9}{'transport':<11}{'CPU/call':>10}{'wall/call':>11}")
    for provider, stream in cases:
        answer = "streamed" if stream else "whole"
        for transport in ("own", "sdk"):
            runs = results[(provider, stream, transport)]
            cpu = statistics.median(r["cpu"] for r in runs) * 1000
            wall = statistics.median(r["wall"] for r in runs) * 1000
            print(f"  {provider:<10}{answer:<9}{transport:<11}{cpu:8.3f} ms{wall:8.3f} ms")
        own, sdk = results[(provider, stream, "own")], results[(provider, stream, "sdk")]
        ratio = statistics.median(o["cpu"] / s["cpu"] for o, s in zip(own, sdk, strict=True))
        print(f"  {provider:<10}{answer:<9}own / sdk CPU {ratio:6.2f}x (paired runs)")


if __name__ == "__main__":
    main()
