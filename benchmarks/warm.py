"""A one-shot ``hermes chat -q`` cold (a fresh process loads everything) and warm (a resident
``hermes serve`` runs it in a forked child), against the test kit's fake LLM server.

The task makes two requests: the model calls one tool, then answers in text. Every installed
plugin loads, as in a user's install. Runs alternate cold, warm, cold, warm... so that both see
the same load; the figures are medians:

- wall time of the whole command, as the caller sees it;
- the model's own time: from the first request reaching the server to the last one (the fake
  model answers at once; what lies between is the tool call and hermes's own work between the
  two requests, counted here as the model's to stay on the safe side);
- wall time minus the model's time: what hermes costs around the model;
- CPU time (user and system) of the process that ran the call, and of the caller: on a
  machine shared with other work these grow far less than wall times do.

Needs the openai provider plugin and the acme-weather example installed (the dev set-up).
Usage: python benchmarks/warm.py [--runs 9] [--anthropic]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hermes_core.cli.serve import registration
from hermes_core.testing import FakeLLM, text, tool_call


def one_shot(argv: list[str], env: dict[str, str], llm: FakeLLM) -> tuple[float, float, float]:
    """Wall seconds of one run, the model's part of it, and the CPU seconds of the process."""
    llm.add(tool_call("get_weather", {"city": "Paris"}), text("Sunny in Paris."))
    before = len(llm.requests)
    cpu_before = _children_cpu()
    started = time.time()
    done = subprocess.run(argv, env=env, capture_output=True)
    wall = time.time() - started
    if done.returncode != 0 or b"Sunny in Paris." not in done.stdout:
        raise SystemExit(f"hermes failed: {done.stderr.decode()}")
    requests = llm.requests[before:]
    return wall, requests[-1].received_at - requests[0].received_at, _children_cpu() - cpu_before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def start_resident(hermes: str, env: dict[str, str], home: Path) -> subprocess.Popen[bytes]:
    """A ``hermes serve`` process, once it is announced."""
    proc = subprocess.Popen(
        [hermes, "serve", "--idle-timeout", "600"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 180
    while registration.read(home) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"hermes serve did not start: {proc.stderr.read().decode()}")
        time.sleep(0.05)
    return proc


def main() -> None:
    """Print cold and warm one-shot figures, alternating the two."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--anthropic", action="store_true", help="Anthropic messages wire.")
    args = parser.parse_args()
    hermes = shutil.which("hermes", path=str(Path(sys.executable).parent)) or "hermes"
    figures: dict[str, list[tuple[float, float, float]]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as folder, FakeLLM() as llm:
        home = Path(folder)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an install has its bytecode, as a user's has
        env["HERMES_HOME"] = str(home)
        wire = "anthropic_messages" if args.anthropic else "chat_completions"
        base_url = llm.anthropic_base_url if args.anthropic else llm.openai_base_url
        argv = [hermes, "chat", "-q", "What is the weather in Paris?", "--provider", "custom"]
        argv += ["--base-url", base_url, "--api-mode", wire, "--model", "bench"]
        argv += ["--toolsets", "weather"]
        cold_env = {**env, "HERMES_SERVE": "off"}
        one_shot(argv, cold_env, llm)  # warms the file cache, writes the command cache
        resident = start_resident(hermes, env, home)
        try:
            one_shot(argv, env, llm)
            for _ in range(args.runs):
                figures["cold"].append(one_shot(argv, cold_env, llm))
                figures["warm"].append(one_shot(argv, env, llm))
        finally:
            resident.send_signal(signal.SIGTERM)
            log = resident.communicate(timeout=30)[1].decode()
    children = [float(cpu) for cpu in re.findall(r"\(cpu ([0-9.]+) s\)", log)][-args.runs :]
    print(f"hermes chat -q, tool call then text, {wire}, {args.runs} runs each (medians)")
    for name, runs in figures.items():
        wall = statistics.median(w for w, _, _ in runs)
        model = statistics.median(m for _, m, _ in runs)
        over = statistics.median(w - m for w, m, _ in runs)
        print(f"  {name}  wall {wall:6.3f} s   model {model:6.3f} s   over the model {over:6.3f} s")
    cold = statistics.median(w for w, _, _ in figures["cold"])
    warm = statistics.median(w for w, _, _ in figures["warm"])
    print(f"  warm / cold wall  {warm / cold:.2f}")
    cold_cpu = statistics.median(c for _, _, c in figures["cold"])
    caller_cpu = statistics.median(c for _, _, c in figures["warm"])
    print(f"  CPU: cold process {cold_cpu:.3f} s; warm caller {caller_cpu:.3f} s", end="")
    if len(children) == args.runs:
        child_cpu = statistics.median(children)
        pairs = zip(figures["warm"], children, strict=True)
        total = statistics.median(c + k for (_, _, c), k in pairs)
        print(f" + child {child_cpu:.3f} s = {total:.3f} s ({total / cold_cpu:.2f} of cold)")
    else:
        print()


if __name__ == "__main__":
    main()
