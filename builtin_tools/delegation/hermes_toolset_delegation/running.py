"""Running the children of one ``delegate_task`` call and reporting on them."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import (
    AgentOutcome,
    AgentTask,
    ApprovalRequest,
    ToolContext,
    ToolError,
    blocked,
)

from .settings import DEPTH_KEY, Settings

NEVER_FOR_CHILDREN = ("clarify",)
"""Toolsets no subagent gets: no one is there to answer its questions."""

CHILD_SOURCE = "subagent"


@dataclass(frozen=True)
class ChildSpec:
    """One task of a ``delegate_task`` call."""

    index: int
    goal: str
    context: str
    toolsets: tuple[str, ...] | None


def delegate(args: dict[str, Any], ctx: ToolContext) -> str:
    """Run every task of the call (in parallel, up to ``max_concurrent_children``) and return
    a JSON report with each child's summary, status and usage, in the order given."""
    settings = Settings.from_config(ctx.config)
    runner = ctx.agents
    if runner is None:
        raise ToolError("delegation is not available here: this host runs no subagents")
    if settings.depth >= settings.max_spawn_depth:
        raise ToolError(
            blocked(
                "delegation.max_spawn_depth",
                f"this agent is a subagent at depth {settings.depth} and may not delegate "
                f"further (delegation.max_spawn_depth is {settings.max_spawn_depth}); do the "
                "work yourself",
            )
        )
    specs = _specs(args, settings)
    batch = _Batch(ctx.cancel_event)
    tasks = [_task(spec, settings, ctx, batch.child()) for spec in specs]
    workers = min(settings.max_concurrent_children, len(tasks))
    try:
        if workers == 1:
            outcomes = [batch.run(runner.run, task) for task in tasks]
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="hermes-subagent") as pool:
                outcomes = list(pool.map(lambda task: batch.run(runner.run, task), tasks))
    finally:
        batch.done()
    return _report(specs, outcomes)


class _Batch:
    """The children of one call: each has a cancel event of its own, and when the call is
    interrupted the batch closes first (no queued child starts any more) and only then cancels
    the running ones, so a slot a cancelled child frees never starts another."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel
        self.closed = threading.Event()
        self.children: list[threading.Event] = []
        self.finished = threading.Event()
        self._watcher = threading.Thread(
            target=self._watch, name="hermes-subagent-watch", daemon=True
        )
        self._watcher.start()

    def child(self) -> threading.Event:
        """A cancel event for one more child."""
        event = threading.Event()
        self.children.append(event)
        return event

    def _watch(self) -> None:
        while not self.finished.is_set():
            if self.cancel.wait(0.05):
                self.closed.set()  # first: nothing queued may start
                for event in self.children:
                    event.set()
                return

    def run(self, run: Callable[[AgentTask], AgentOutcome], task: AgentTask) -> AgentOutcome:
        """``task``'s outcome; a child the closed batch never started is ``interrupted``."""
        if self.closed.is_set() or self.cancel.is_set():
            return AgentOutcome(
                session_id="", text="", status="interrupted", error="not started: interrupted"
            )
        return _run_one(run, task)

    def done(self) -> None:
        """The call is over: stop watching."""
        self.finished.set()


def _specs(args: dict[str, Any], settings: Settings) -> list[ChildSpec]:
    goal = (args.get("goal") or "").strip()
    tasks = args.get("tasks")
    if tasks and goal:
        raise ToolError(
            "give either 'goal' (one subagent) or 'tasks' (several), not both; put the single "
            "goal into 'tasks' as one more entry if you want it to run beside the others"
        )
    if not tasks:
        if not goal:
            raise ToolError("'goal' is required: say what the subagent must achieve")
        tasks = [{"goal": goal, "context": args.get("context"), "toolsets": args.get("toolsets")}]
    elif args.get("context") or args.get("toolsets"):
        raise ToolError(
            "with 'tasks', give each task its own 'context' and 'toolsets' inside the task"
        )
    if len(tasks) > settings.max_tasks:
        raise ToolError(
            f"{len(tasks)} tasks is more than delegation.max_tasks ({settings.max_tasks}); "
            "merge related tasks or delegate in rounds"
        )
    specs = []
    for index, task in enumerate(tasks):
        task_goal = (task.get("goal") or "").strip()
        if not task_goal:
            raise ToolError(f"tasks[{index}] has an empty 'goal'")
        toolsets = task.get("toolsets")
        specs.append(
            ChildSpec(
                index=index,
                goal=task_goal,
                context=(task.get("context") or "").strip(),
                toolsets=tuple(toolsets) if toolsets is not None else settings.toolsets,
            )
        )
    return specs


def _task(
    spec: ChildSpec, settings: Settings, ctx: ToolContext, cancel: threading.Event
) -> AgentTask:
    child_depth = settings.depth + 1
    excluded = list(NEVER_FOR_CHILDREN)
    if child_depth >= settings.max_spawn_depth:
        excluded.append("delegation")
    return AgentTask(
        prompt=spec.goal,
        parent_session_id=ctx.session_id or None,
        source=CHILD_SOURCE,
        toolsets=list(spec.toolsets) if spec.toolsets is not None else None,
        model=settings.model,
        provider=settings.provider,
        base_url=settings.base_url,
        api_mode=settings.api_mode,
        max_iterations=settings.max_iterations,
        system_context=_system_context(spec, child_depth),
        approval=_approval(ctx, settings, spec),
        cancel_event=cancel,
        config_overrides={DEPTH_KEY: child_depth},
        exclude_toolsets=excluded,
    )


def _system_context(spec: ChildSpec, depth: int) -> str:
    parts = [
        "You are a subagent: another agent delegated one task to you. You cannot talk to the "
        "user or ask questions; work with your tools until the task is done or cannot be done.",
        f"Your task: {spec.goal}",
    ]
    if spec.context:
        parts.append(f"Context from the delegating agent:\n{spec.context}")
    parts.append(
        "Your final answer is all the delegating agent will see: make it a concise, complete "
        "summary of what you did, what you found (with paths, names and figures), and anything "
        "left undone or uncertain."
    )
    if depth > 1:
        parts.append(f"(You are {depth} delegations deep.)")
    return "\n\n".join(parts)


def _approval(
    ctx: ToolContext, settings: Settings, spec: ChildSpec
) -> Callable[[ApprovalRequest], str | None]:
    """Children's approvals: granted when ``subagent_auto_approve``; else asked of the parent's
    approver (its remembered decisions, plugins and person), labelled with the child."""
    if settings.subagent_auto_approve:
        return lambda request: "once"

    def ask_parent(request: ApprovalRequest) -> str:
        labelled = dataclasses.replace(
            request, reason=f"subagent {spec.index + 1} ({_short(spec.goal)}): {request.reason}"
        )
        return "once" if ctx.approver(labelled) else "deny"

    return ask_parent


def _run_one(run: Callable[[AgentTask], AgentOutcome], task: AgentTask) -> AgentOutcome:
    """A child's outcome; a runner that raises (it should not) still yields an outcome."""
    try:
        return run(task)
    except Exception as exc:
        return AgentOutcome(
            session_id=task.session_id or "",
            text="",
            status="error",
            error=f"{type(exc).__name__}: {exc}",
        )


def _report(specs: Sequence[ChildSpec], outcomes: Sequence[AgentOutcome]) -> str:
    results = []
    total_in = total_out = 0
    total_cost = 0.0
    for spec, outcome in zip(specs, outcomes, strict=True):
        entry: dict[str, Any] = {
            "task": spec.index + 1,
            "goal": spec.goal,
            "status": outcome.status,
            "summary": outcome.text,
        }
        if outcome.error:
            entry["error"] = outcome.error
        entry["session_id"] = outcome.session_id
        entry["usage"] = {
            "input_tokens": outcome.usage.input_tokens,
            "output_tokens": outcome.usage.output_tokens,
        }
        entry["cost_usd"] = round(outcome.cost_usd, 6)
        entry["duration_seconds"] = round(outcome.duration, 2)
        results.append(entry)
        total_in += outcome.usage.input_tokens
        total_out += outcome.usage.output_tokens
        total_cost += outcome.cost_usd
    failed = sum(1 for o in outcomes if o.status != "completed")
    report = {
        "results": results,
        "completed": len(outcomes) - failed,
        "not_completed": failed,
        "total_usage": {"input_tokens": total_in, "output_tokens": total_out},
        "total_cost_usd": round(total_cost, 6),
    }
    return json.dumps(report, ensure_ascii=False, indent=1)


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
