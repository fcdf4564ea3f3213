"""Time to compress a 2,000-message transcript, the model's own time excluded.

The transcript is a long agent session: user requests, batches of one to three parallel tool
calls with outputs from a few lines to several thousand characters (some repeated), reasoning,
and answers. The ``compressor`` engine runs with its default settings in a 128k-token window; the
summarising model answers at once with a fixed summary, so what is measured is the engine's own
work (planning, pruning, building the summary request, assembling the result).

Three figures:

- ``engine``: ``Compressor.compress`` alone (the target: a median of at most 50 ms);
- ``agent``: ``Agent.compress`` with an in-memory session store: the engine, the copies handed to
  it, repair and validation, the child session and the rebuilt system prompt;
- ``preflight``: the estimate before a request, over the whole transcript and then with a real
  prompt size reported (only new messages are counted).

Usage: python benchmarks/compression.py [--messages 2000] [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

from hermes_engine_compressor.engine import Compressor

from hermes_core.loop.agent import Agent
from hermes_core.loop.transcript import validate
from hermes_core.plugins.manager import PluginManager
from hermes_hookspecs import ModelResponse, Usage

SUMMARY = "## Goal\nShip the release.\n## Done\nEverything up to the last request.\n"
TARGET_MS = 50.0


def transcript(size: int, seed: int = 7) -> list[dict[str, Any]]:
    """A valid agent transcript of exactly ``size`` messages."""
    rng = random.Random(seed)
    outputs: list[str] = []
    messages: list[dict[str, Any]] = []
    n = 0
    while True:
        turn: list[dict[str, Any]] = [
            {"role": "user", "content": f"request {n}: " + "please check " * 20}
        ]
        for _ in range(rng.randint(2, 10)):
            calls = []
            for _ in range(rng.randint(1, 3)):
                n += 1
                function = {
                    "name": rng.choice(["read", "grep", "run"]),
                    "arguments": json.dumps({"path": f"src/module_{n % 50}.py", "line": n}),
                }
                calls.append({"id": f"call_{n}", "type": "function", "function": function})
            turn.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": calls,
                    "reasoning": "thinking " * 40,
                    "finish_reason": "tool_calls",
                }
            )
            for call in calls:
                if outputs and rng.random() < 0.1:
                    output = rng.choice(outputs)  # the same output again
                else:
                    output = f"{call['id']}\n" + "line of output\n" * rng.choice([2, 20, 150, 500])
                    outputs.append(output)
                turn.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": output,
                        "tool_name": call["function"]["name"],
                    }
                )
        turn.append({"role": "assistant", "content": "done: " + "details " * 50})
        if len(messages) + len(turn) > size:
            break
        messages += turn
    while len(messages) < size:  # short exchanges fill up to the exact size
        role = "user" if messages[-1]["role"] != "user" else "assistant"
        messages.append({"role": role, "content": f"{role} message {len(messages)}"})
    assert len(messages) == size and not validate(messages)
    return messages


def timed(fn: Any, runs: int) -> list[float]:
    figures = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        figures.append((time.perf_counter() - started) * 1000)
    return figures


def line(name: str, figures: list[float]) -> str:
    ordered = sorted(figures)
    p90 = ordered[max(0, int(len(ordered) * 0.9) - 1)]
    return (
        f"  {name:<10} median {statistics.median(figures):7.2f} ms   p90 {p90:7.2f} ms   "
        f"min {min(figures):7.2f} ms   max {max(figures):7.2f} ms"
    )


class InstantModel:
    """Answers every request (summaries included) at once."""

    def complete(self, request: Any) -> ModelResponse:
        return ModelResponse({"role": "assistant", "content": SUMMARY}, "stop", Usage(1, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    messages = transcript(args.messages)
    chars = sum(len(str(m.get("content") or "")) for m in messages)

    def engine() -> Compressor:
        made = Compressor({})
        made.set_context_window(128_000)
        made.summarize = lambda request, max_tokens: SUMMARY
        return made

    result = engine().compress([dict(m) for m in messages])
    assert not validate(result)
    engine_ms = timed(lambda: engine().compress([dict(m) for m in messages]), args.runs)

    plugins = PluginManager(only=["compressor"], environ={})
    agent = Agent.from_config(client=InstantModel(), plugins=plugins, config={})
    agent.run_conversation("start")  # a session, a system prompt
    agent_ms = []
    for _ in range(args.runs):
        agent.messages = [dict(m) for m in messages]
        started = time.perf_counter()
        agent.compress()
        agent_ms.append((time.perf_counter() - started) * 1000)
    agent.close()

    made = engine()
    full_ms = timed(lambda: made.should_compress_preflight(messages), args.runs)
    made.update_from_response(Usage(input_tokens=60_000))
    grown = list(messages)
    made.should_compress_preflight(grown)
    made.update_from_response(Usage(input_tokens=60_000))
    grown += [{"role": "user", "content": "one more"}]
    incremental_ms = timed(lambda: made.should_compress_preflight(grown), args.runs)

    before, after = len(messages), len(result)
    print(
        f"compressing a {before:,}-message transcript ({chars / 1e6:.1f} M characters) "
        f"to {after} messages, model time excluded, {args.runs} runs"
    )
    print(line("engine", engine_ms))
    print(line("agent", agent_ms))
    print(line("preflight", full_ms) + "   (whole transcript)")
    print(line("preflight", incremental_ms) + "   (new messages only)")
    verdict = "ok" if statistics.median(engine_ms) <= TARGET_MS else "OVER TARGET"
    print(f"  target: engine median <= {TARGET_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()
