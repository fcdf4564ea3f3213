"""What tracing costs each iteration of the agent loop.

The loop of ``benchmarks/loop_overhead.py`` (an instant model, 50 tools, one model call and one
tool call per iteration, a history of 200 messages) runs in three set-ups, each in a fresh
process, alternating so that all three see the same load:

- ``without``: the tracing plugin is not loaded;
- ``off``: it is loaded but tracing is off (no configuration, no ``OTEL_*`` variable); the child
  also reports whether any OpenTelemetry module was imported (it must not be);
- ``on``: tracing on, with the SDK's batch span processor in front of an in-memory exporter
  and an in-memory metric reader (every span and metric is made, nothing leaves the process).

Printed: the median per iteration of each set-up over all runs (wall time, and the CPU time of
all the process's threads, which a busy machine disturbs less), and ``off`` and ``on`` minus
``without``. The target: ``on`` adds at most 0.3 ms, ``off`` nothing measurable.

``--tree DIR`` measures the loop of another source tree of hermes (``git archive`` of a
commit), with this checkout's tracing plugin: what tracing adds does not depend on the loop,
and a loop made slower by something else hides it in the noise.

Usage: python benchmarks/tracing.py [--iterations 200] [--runs 7] [--size 200] [--tree DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODES = ("without", "off", "on")
TARGET_MS = 0.3


def child(
    mode: str, iterations: int, runs: int, size: int, tree: Path | None = None
) -> dict[str, Any]:
    """Measure ``mode`` in this process (the child side); ``tree``: import hermes from that
    source tree (this checkout's tracing plugin still)."""
    sys.path.insert(0, str(HERE))
    import loop_overhead as lo

    if tree is not None:
        lo.use_tree(tree)
        sys.path.insert(0, str(HERE.parent / "plugins" / "tracing"))

    h = lo.imports()
    extra: list[tuple[str, Any]] = [("bench_tools", lo.toolset_plugin(h))]
    spans: Any = None
    if mode in ("off", "on"):
        import hermes_tracing_otel

        extra.append(("tracing", hermes_tracing_otel))
    if mode == "on":
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(spans, max_queue_size=8192))
        meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
        hermes_tracing_otel.configure(provider, meters)
    plugins = h.PluginManager(only=[], extra=extra, environ={})
    lo.run_once(20, size, plugins, h)  # warm-up: imports, thread pools, caches
    figures = [lo.run_once(iterations, size, plugins, h) for _ in range(runs)]
    exported = 0
    if spans is not None:
        provider.force_flush()
        exported = len(spans.get_finished_spans())
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
    return {"per": [f[0] for f in figures], "cpu": [f[1] for f in figures],
            "otel_modules": len(loaded), "spans": exported}  # fmt: skip


def in_child(mode: str, iterations: int, size: int, tree: Path | None) -> dict[str, Any]:
    """One run of ``mode`` in a fresh process."""
    argv = [sys.executable, __file__, "--child", mode, "--runs", "1"]
    argv += ["--iterations", str(iterations), "--size", str(size)]
    if tree is not None:
        argv += ["--tree", str(tree)]
    env_clean = {
        k: v
        for k, v in __import__("os").environ.items()
        if not k.startswith(("OTEL_", "TRACEPARENT", "HERMES_"))
    }
    out = subprocess.run(argv, check=True, capture_output=True, text=True, env=env_clean).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--size", type=int, default=200, help="messages of history")
    parser.add_argument(
        "--tree", type=Path, help="measure the loop of another source tree of hermes"
    )
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.iterations, args.runs, args.size, args.tree)))
        return
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    for _ in range(args.runs):
        for mode in MODES:
            results[mode].append(in_child(mode, args.iterations, args.size, args.tree))
    print(
        f"tracing overhead per loop iteration ({args.iterations} iterations, {args.size} "
        f"messages of history, {args.runs} runs of each set-up, alternating)"
        + (f"; the loop of {args.tree}" if args.tree else "")
    )
    medians: dict[str, float] = {}
    cpus: dict[str, float] = {}
    for mode in MODES:
        per = [p for r in results[mode] for p in r["per"]]
        cpu = [c for r in results[mode] for c in r["cpu"]]
        medians[mode] = statistics.median(per) * 1000
        cpus[mode] = statistics.median(cpu) * 1000
        otel = max(r["otel_modules"] for r in results[mode])
        spans = statistics.median(r["spans"] for r in results[mode])
        print(
            f"  {mode:>7}: median {medians[mode]:.3f} ms   min {min(per) * 1000:.3f} ms   "
            f"cpu {statistics.median(cpu) * 1000:.3f} ms   "
            f"opentelemetry modules imported: {otel}"
            + (f"   spans exported per run: {spans:.0f}" if mode == "on" else "")
        )
    for mode, label in (("on", "tracing on"), ("off", "tracing off (plugin loaded)")):
        wall = medians[mode] - medians["without"]
        cpu_added = cpus[mode] - cpus["without"]
        print(
            f"  {label} adds {wall:+.3f} ms wall, {cpu_added:+.3f} ms cpu per iteration"
            + (f" (target <= {TARGET_MS} ms)" if mode == "on" else "")
        )


if __name__ == "__main__":
    main()
