"""Per-iteration overhead of the agent loop.

A model client that answers instantly (no recording, no copying) drives an agent with 50 tools
and a history of 200, then 20,000 messages; each iteration is one model call and one trivial
tool call (run as every tool runs: on a worker thread, under its timeout). The figure is the
wall time from one model call to the next, so everything the loop does around the model is in
it: transcript repair/validation/stripping, request building, hooks, dispatch, persistence.
The start of the turn (loading the history, the first validation) is printed apart: it is paid
once per turn, not per iteration. ``cpu`` is the CPU time of all the process's threads per
iteration, which a busy machine disturbs less than the wall time (on a machine with more
runnable threads than cores, a loop that never sleeps gets its fair share of a core, while one
that sleeps on every thread hand-off is favoured each time it wakes: compare the CPU there).

``--against DIR`` compares with another source tree of hermes (an older commit, say from
``git worktree add`` or ``git archive``): each run then measures both trees, one after the other,
in fresh processes that import hermes from their tree, so both see the same load.

Usage: python benchmarks/loop_overhead.py [--iterations 200] [--runs 7] [--sizes 200,20000]
       [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

TOOLS = 50
SIZES = (200, 20_000)
HERE = Path(__file__).resolve().parent.parent


def use_tree(tree: Path) -> None:
    """Import hermes from the source tree ``tree``, not from what is installed."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path[:0] = [str(tree), str(tree / "runtime"), str(tree / "hookspecs")]


def imports() -> Any:
    from hermes_core.loop.agent import Agent
    from hermes_core.plugins.manager import PluginManager
    from hermes_hookspecs import ModelResponse, Tool, Toolset, Usage, hookimpl

    return types.SimpleNamespace(
        Agent=Agent,
        PluginManager=PluginManager,
        ModelResponse=ModelResponse,
        Tool=Tool,
        Toolset=Toolset,
        Usage=Usage,
        hookimpl=hookimpl,
    )


class InstantModel:
    """Answers ``iterations`` tool calls, then text, with prebuilt responses; notes the time of
    every call."""

    def __init__(self, iterations: int, h: Any) -> None:
        self.h = h
        self.left = iterations
        self.n = 0
        self.times: list[float] = []
        self.cpu: list[float] = []

    def complete(self, request):
        h = self.h
        self.times.append(time.perf_counter())
        self.cpu.append(time.process_time())
        self.n += 1
        if self.left <= 0:
            return h.ModelResponse({"role": "assistant", "content": "done"}, "stop", h.Usage(1, 1))
        self.left -= 1
        call = {
            "id": f"c{self.n}",
            "type": "function",
            "function": {"name": "tool_07", "arguments": '{"x": "1"}'},
        }
        return h.ModelResponse(
            {"role": "assistant", "content": None, "tool_calls": [call]},
            "tool_calls",
            h.Usage(1, 1),
        )


def toolset_plugin(h: Any) -> types.ModuleType:
    params = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    tools = [
        h.Tool(f"tool_{i:02d}", f"tool number {i}", params, lambda a, c: "ok") for i in range(TOOLS)
    ]
    mod = types.ModuleType("bench_tools")
    mod.hermes_register_toolsets = h.hookimpl(
        lambda register: register(h.Toolset("bench", tools=tools))
    )
    return mod


def history(size: int) -> list[dict]:
    messages = []
    for i in range(size // 4):
        messages.append({"role": "user", "content": f"question {i} " + "lorem ipsum " * 20})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"h{i}",
                        "type": "function",
                        "function": {"name": "tool_01", "arguments": json.dumps({"x": str(i)})},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"h{i}", "content": "result " * 30})
        messages.append({"role": "assistant", "content": "answer " * 30})
    return messages


def run_once(iterations: int, size: int, plugins: Any, h: Any) -> tuple[float, float, float]:
    """Seconds per iteration (model call to model call), CPU seconds per iteration (all the
    process's threads) and seconds of the turn's start."""
    model = InstantModel(iterations, h)
    agent = h.Agent.from_config(client=model, plugins=plugins, config={}, max_turns=iterations + 5)
    hist = history(size)
    started = time.perf_counter()
    result = agent.run_conversation("go", conversation_history=hist)
    agent.close()
    assert result["completed"], result["error"]
    assert result["api_calls"] == iterations + 1
    times, cpu = model.times, model.cpu
    per = len(times) - 1
    return (times[-1] - times[0]) / per, (cpu[-1] - cpu[0]) / per, times[0] - started


def measure(iterations: int, runs: int, sizes: list[int]) -> dict[int, list[list[float]]]:
    """For each history size, ``runs`` figures of :func:`run_once` in this process."""
    h = imports()
    plugins = h.PluginManager(only=[], extra=[("bench_tools", toolset_plugin(h))], environ={})
    run_once(20, 200, plugins, h)  # warm-up: imports, thread pools, caches
    return {
        size: [list(run_once(iterations, size, plugins, h)) for _ in range(runs)] for size in sizes
    }


def line(size: int, figures: list[list[float]], label: str = "") -> str:
    per = [f[0] for f in figures]
    cpu = statistics.median(f[1] for f in figures)
    start = statistics.median(f[2] for f in figures)
    return (
        f"  {label}{size:>6} messages: median {statistics.median(per) * 1000:.3f} ms   "
        f"min {min(per) * 1000:.3f} ms   max {max(per) * 1000:.3f} ms   "
        f"cpu {cpu * 1000:.3f} ms   (turn start {start * 1000:.1f} ms)"
    )


def in_child(tree: Path, iterations: int, sizes: list[int]) -> dict[int, list[list[float]]]:
    """One run of each size in a fresh process that imports hermes from ``tree``."""
    argv = [sys.executable, __file__, "--child", str(tree), "--runs", "1"]
    argv += ["--iterations", str(iterations), "--sizes", ",".join(map(str, sizes))]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return {int(k): v for k, v in json.loads(out).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="history sizes, comma separated"
    )
    parser.add_argument("--against", type=Path, help="another source tree of hermes to compare")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child is not None:
        use_tree(args.child)
        print(json.dumps(measure(args.iterations, args.runs, sizes)))
        return
    print(
        f"loop overhead per iteration ({TOOLS} tools, {args.iterations} iterations, "
        f"{args.runs} runs)"
    )
    if args.against is None:
        for size, figures in measure(args.iterations, args.runs, sizes).items():
            print(line(size, figures))
        return
    trees = {"this ": HERE, "other": args.against.resolve()}
    results: dict[str, dict[int, list[list[float]]]] = {k: {s: [] for s in sizes} for k in trees}
    for _ in range(args.runs):  # alternating, so that both trees see the same load
        for label, tree in trees.items():
            for size, figures in in_child(tree, args.iterations, sizes).items():
                results[label][size] += figures
    print(f"  this:  {HERE}\n  other: {trees['other']}")
    for size in sizes:
        for label in trees:
            print(line(size, results[label][size], f"{label} "))
        ratio = statistics.median(f[0] for f in results["this "][size]) / statistics.median(
            f[0] for f in results["other"][size]
        )
        print(f"  {size:>6} messages: this / other = {ratio:.2f} (medians of the wall time)")


if __name__ == "__main__":
    main()
