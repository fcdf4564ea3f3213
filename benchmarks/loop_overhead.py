"""Per-iteration overhead of the agent loop.

A model client that answers instantly (no recording, no copying) drives an agent with 50 tools
and a 200-message history; each iteration is one model call and one trivial tool call. The
figure is wall time per iteration, so everything the loop does around the model is in it:
transcript repair/validation/stripping, request building, hooks, dispatch, persistence.

Usage: python benchmarks/loop_overhead.py [--iterations 200] [--runs 7]
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
HISTORY = 200


class InstantModel:
    """Answers ``iterations`` tool calls, then text, with prebuilt responses."""

    def __init__(self, iterations: int) -> None:
        self.left = iterations
        self.n = 0

    def complete(self, request):
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


def history() -> list[dict]:
    messages = []
    for i in range(HISTORY // 4):
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


def run_once(iterations: int, plugins: PluginManager) -> float:
    agent = Agent.from_config(
        client=InstantModel(iterations), plugins=plugins, config={}, max_turns=iterations + 5
    )
    hist = history()
    started = time.perf_counter()
    result = agent.run_conversation("go", conversation_history=hist)
    elapsed = time.perf_counter() - started
    agent.close()
    assert result["completed"], result["error"]
    assert result["api_calls"] == iterations + 1
    return elapsed / (iterations + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    plugins = PluginManager(only=[], extra=[("bench_tools", toolset_plugin())], environ={})
    run_once(20, plugins)  # warm-up: imports, thread pools, caches
    figures = [run_once(args.iterations, plugins) for _ in range(args.runs)]
    print(
        f"loop overhead per iteration ({TOOLS} tools, {HISTORY}+ message history, "
        f"{args.iterations} iterations, {args.runs} runs)"
    )
    print(
        f"  median {statistics.median(figures) * 1000:.3f} ms   "
        f"min {min(figures) * 1000:.3f} ms   max {max(figures) * 1000:.3f} ms"
    )


if __name__ == "__main__":
    main()
