"""Per-iteration overhead of the agent loop.

A model client that answers instantly (no recording, no copying) drives an agent with 50 tools
and a history of 200, then 20,000 messages; each iteration is one model call and one trivial
tool call (run as every tool runs: on a worker thread, under its timeout). The figure is the
wall time from one model call to the next, so everything the loop does around the model is in
it: transcript repair/validation/stripping, request building, hooks, dispatch, persistence.
The start of the turn (loading the history, the first validation) is printed apart: it is paid
once per turn, not per iteration. ``cpu`` is the CPU time of all the process's threads per
iteration, which a busy machine disturbs less than the wall time.

Usage: python benchmarks/loop_overhead.py [--iterations 200] [--runs 7] [--sizes 200,20000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import types

from hermes_core.loop.agent import Agent
from hermes_core.plugins.manager import PluginManager
from hermes_hookspecs import ModelResponse, Tool, Toolset, Usage, hookimpl

TOOLS = 50
SIZES = (200, 20_000)


class InstantModel:
    """Answers ``iterations`` tool calls, then text, with prebuilt responses; notes the time of
    every call."""

    def __init__(self, iterations: int) -> None:
        self.left = iterations
        self.n = 0
        self.times: list[float] = []
        self.cpu: list[float] = []

    def complete(self, request):
        self.times.append(time.perf_counter())
        self.cpu.append(time.process_time())
        self.n += 1
        if self.left <= 0:
            return ModelResponse({"role": "assistant", "content": "done"}, "stop", Usage(1, 1))
        self.left -= 1
        call = {
            "id": f"c{self.n}",
            "type": "function",
            "function": {"name": "tool_07", "arguments": '{"x": "1"}'},
        }
        return ModelResponse(
            {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls", Usage(1, 1)
        )


def toolset_plugin() -> types.ModuleType:
    params = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    tools = [
        Tool(f"tool_{i:02d}", f"tool number {i}", params, lambda a, c: "ok") for i in range(TOOLS)
    ]
    mod = types.ModuleType("bench_tools")
    mod.hermes_register_toolsets = hookimpl(
        lambda register: register(Toolset("bench", tools=tools))
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


def run_once(iterations: int, size: int, plugins: PluginManager) -> tuple[float, float, float]:
    """Seconds per iteration (model call to model call), CPU seconds per iteration (all the
    process's threads) and seconds of the turn's start."""
    model = InstantModel(iterations)
    agent = Agent.from_config(client=model, plugins=plugins, config={}, max_turns=iterations + 5)
    hist = history(size)
    started = time.perf_counter()
    result = agent.run_conversation("go", conversation_history=hist)
    agent.close()
    assert result["completed"], result["error"]
    assert result["api_calls"] == iterations + 1
    times, cpu = model.times, model.cpu
    per = len(times) - 1
    return (times[-1] - times[0]) / per, (cpu[-1] - cpu[0]) / per, times[0] - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="history sizes, comma separated"
    )
    args = parser.parse_args()
    plugins = PluginManager(only=[], extra=[("bench_tools", toolset_plugin())], environ={})
    run_once(20, 200, plugins)  # warm-up: imports, thread pools, caches
    print(
        f"loop overhead per iteration ({TOOLS} tools, {args.iterations} iterations, "
        f"{args.runs} runs)"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        figures = [run_once(args.iterations, size, plugins) for _ in range(args.runs)]
        per = [f[0] for f in figures]
        cpu = statistics.median(f[1] for f in figures)
        start = statistics.median(f[2] for f in figures)
        print(
            f"  {size:>6} messages: median {statistics.median(per) * 1000:.3f} ms   "
            f"min {min(per) * 1000:.3f} ms   max {max(per) * 1000:.3f} ms   "
            f"cpu {cpu * 1000:.3f} ms   (turn start {start * 1000:.1f} ms)"
        )


if __name__ == "__main__":
    main()
