"""The ``cronjob`` tool: the agent schedules, lists and changes jobs itself.

It works on the jobs of the call's person (``ctx.person``) only: the owner's in
``<home>/cron``, a person's in ``<home>/people/<person>/cron``. Another person's job id is, to
it, no job at all."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from hermes_hookspecs import ToolContext, ToolError

from .jobs import JobError, JobStore
from .schedule import ScheduleError

DESCRIPTION = (
    "Schedule work for later or on repeat: each run is a fresh agent session with no memory of "
    "this conversation, so the prompt must say everything the job needs. Actions: 'create' "
    "(schedule, prompt; optional name, toolsets, deliver), 'list', 'pause', 'resume', 'remove', "
    "'run' (make it due now; the scheduler runs it shortly) — the last four take job_id. "
    "Schedules: a cron expression ('0 9 * * 1-5' = 9:00 on weekdays, local time), an interval "
    "('every 30m', 'every 2h'), or one time ('in 20m', 'at 2026-12-24T09:00'). Results are saved "
    "under the hermes home's cron/output; deliver 'PLATFORM:CHAT_ID' also sends them to a chat."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": ["create", "list", "pause", "resume", "remove", "run"],
        },
        "schedule": {"type": "string", "description": "When to run (create)."},
        "prompt": {"type": "string", "description": "The complete task of each run (create)."},
        "name": {"type": "string", "description": "A short name (create)."},
        "toolsets": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Toolsets of the job's agent (default: the configured).",
        },
        "deliver": {
            "type": "string",
            "description": "'local' (default) or 'PLATFORM:CHAT_ID' (create).",
        },
        "job_id": {"type": "string", "description": "The job (pause, resume, remove, run)."},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def _store(ctx: ToolContext) -> JobStore:
    """The jobs of the call's person in the host's home."""
    if ctx.hermes_home is None:
        raise ToolError("scheduling needs a hermes home folder; this agent runs without one")
    return JobStore(ctx.hermes_home, ctx.person)


def _when(timestamp: float | None) -> str | None:
    if not timestamp:
        return None
    return _dt.datetime.fromtimestamp(timestamp).astimezone().isoformat(timespec="minutes")


def _brief(job: dict[str, Any]) -> dict[str, Any]:
    return {
        "job_id": job["id"],
        "name": job["name"],
        "schedule": job["schedule"],
        "state": job["state"],
        "next_run": _when(job.get("next_run_at")) if job["state"] == "scheduled" else None,
        "last_status": job.get("last_status"),
        "deliver": job.get("deliver"),
    }


def cronjob(args: dict[str, Any], ctx: ToolContext) -> str:
    """The ``cronjob`` tool: create, list, pause, resume, remove or run the jobs of the call's
    person."""
    store = _store(ctx)
    action = args["action"]
    try:
        if action == "list":
            jobs = [_brief(j) for j in store.load() if j.get("state") != "completed"]
            return json.dumps({"jobs": jobs}, ensure_ascii=False)
        if action == "create":
            missing = [k for k in ("schedule", "prompt") if not args.get(k)]
            if missing:
                raise ToolError(f"action 'create' needs {' and '.join(missing)}")
            job = store.create(
                args["schedule"],
                args["prompt"],
                name=args.get("name"),
                toolsets=args.get("toolsets"),
                deliver=args.get("deliver"),
                origin=dict(ctx.trace_context),
            )
            return json.dumps({"created": _brief(job)}, ensure_ascii=False)
        ref = args.get("job_id")
        if not ref:
            raise ToolError(f"action {action!r} needs job_id (see action 'list')")
        operation = {
            "pause": store.pause,
            "resume": store.resume,
            "remove": store.remove,
            "run": store.trigger,
        }[action]
        job = operation(ref)
        return json.dumps({action if action != "run" else "due_now": _brief(job)})
    except (JobError, ScheduleError) as exc:
        raise ToolError(str(exc)) from None
