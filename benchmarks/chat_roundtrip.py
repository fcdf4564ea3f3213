"""``hermes chat -q`` end to end against the test kit's fake LLM server.

A two-request task: the model calls one tool, then answers in text, in chat-completions mode
(or Anthropic messages with ``--anthropic``). Every installed plugin loads, as in a user's
install, and no resident process serves the call (``HERMES_SERVE=off``). Each run is a fresh
``hermes`` process, alternating with a bare import of the SDK so that both see the same load;
the figures are medians over the runs:

- wall time of the whole command;
- time from process start to the first model request reaching the server, next to the time of
  a bare ``python -c "import openai"`` (or ``anthropic``: the SDK's own import cost, which
  hermes cannot avoid), and the whole command's wall time over it;
- peak resident memory of the process.

With ``--callgrind N`` it also counts, under ``valgrind --tool=callgrind``, the instructions of
N runs of the command and N of the bare SDK import (medians and their ratio): a figure that the
machine's load does not change.

Needs the openai provider plugin and the acme-weather example installed (the dev set-up).
Usage: python benchmarks/chat_roundtrip.py [--runs 7] [--anthropic] [--callgrind 0]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hermes_core.testing import FakeLLM, text, tool_call


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Start time, wall seconds and peak RSS (KiB) of one process."""
    started = time.time()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.time() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return started, wall, usage.ru_maxrss


def instructions(argv: list[str], env: dict[str, str], folder: str) -> int:
    """Instructions one run of ``argv`` executes, counted by callgrind."""
    out = os.path.join(folder, f"callgrind.{len(os.listdir(folder))}")
    run_child(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv], env)
    with open(out, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise SystemExit(f"no instruction total in {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--anthropic", action="store_true", help="Anthropic messages wire.")
    parser.add_argument("--callgrind", type=int, default=0, help="Runs counted by callgrind.")
    args = parser.parse_args()
    sdk_name = "anthropic" if args.anthropic else "openai"
    wire = "anthropic_messages" if args.anthropic else "chat_completions"
    hermes = shutil.which("hermes", path=str(Path(sys.executable).parent)) or "hermes"
    walls, firsts, rss, imports = [], [], [], []
    counted: tuple[list[int], list[int]] = ([], [])
    with tempfile.TemporaryDirectory() as home, FakeLLM() as llm:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an install has its bytecode, as a user's has
        env.update(HERMES_HOME=home, HERMES_SERVE="off")
        argv = [
            hermes,
            "chat",
            "-q",
            "What is the weather in Paris?",
            "--provider",
            "custom",
            "--base-url",
            llm.anthropic_base_url if args.anthropic else llm.openai_base_url,
            "--api-mode",
            wire,
            "--model",
            "bench",
            "--toolsets",
            "weather",
        ]
        for _ in range(args.runs + 1):  # the first run warms the file cache and is dropped
            llm.add(tool_call("get_weather", {"city": "Paris"}), text("Sunny in Paris."))
            before = len(llm.requests)
            started, wall, peak = run_child(argv, env)
            first = llm.requests[before].received_at - started
            walls.append(wall)
            firsts.append(first)
            rss.append(peak)
            imports.append(run_child([sys.executable, "-c", f"import {sdk_name}"], env)[1])
        with tempfile.TemporaryDirectory() as folder:
            for _ in range(args.callgrind):
                llm.add(tool_call("get_weather", {"city": "Paris"}), text("Sunny in Paris."))
                counted[0].append(instructions(argv, env, folder))
                counted[1].append(
                    instructions([sys.executable, "-c", f"import {sdk_name}"], env, folder)
                )
    walls, firsts, rss, imports = walls[1:], firsts[1:], rss[1:], imports[1:]
    print(f"hermes chat -q, tool call then text, {wire}, {args.runs} runs (medians)")
    first, sdk = statistics.median(firsts), statistics.median(imports)
    wall = statistics.median(walls)
    bare = f"bare `python -c 'import {sdk_name}'`"
    print(f"  wall                            {wall:6.3f} s")
    print(f"  start to first request          {first:6.3f} s")
    print(f"  {bare:<32}{sdk:6.3f} s")
    print(f"  first request minus SDK import  {first - sdk:+6.3f} s")
    ratios = sorted(w / i for w, i in zip(walls, imports, strict=True))
    print(f"  wall / SDK import               {statistics.median(ratios):6.2f}x (paired runs)")
    print(f"  peak RSS                        {statistics.median(rss) / 1024:6.1f} MiB")
    if args.callgrind:
        ours, floor = (statistics.median(c) for c in counted)
        print(f"  instructions (callgrind, {args.callgrind} runs)")
        print(f"    hermes chat -q                {ours / 1e6:8.1f} M")
        print(f"    {bare:<30}{floor / 1e6:8.1f} M")
        print(f"    ratio                         {ours / floor:8.2f}x")


if __name__ == "__main__":
    main()
