"""The CPU cost of people on a gateway request: finding the sender's person, their workspace,
the check that a named session is theirs, and the host runner's scoping of the run
(``hermes_person_scope`` through the plugin manager, the shared people, the session's owner,
the run's host with the person's toolsets ceiling and configuration), against the same request
path without people, in the same process.

The configuration is a realistic one: ``--users`` people (100) with two platform ids each, in
``--groups`` groups (5; every person in one or two, one group shares its sessions, groups set
toolsets, a model, approvals), and guests from an allow-list. Requests cycle through the people
(and a share of guests), each continuing a session of its own that is in the SQLite store.

Both paths are the real objects: the gateway's ``GatewayCore`` built by ``build()`` from the
configuration, the core's ``HostRunner`` with the gateway plugin loaded through its entry point.
What is not measured is the same on both paths: HTTP, the agent itself, the model call.

- ``without people``: what a request did before people existed: the platform's allow-list, the
  workspace folder of (platform, user id), the runner's host of the task (``_host``).
- ``with people``: ``GatewayCore._admit`` (the person), ``_workspace`` (their folder),
  ``_owns`` (the named session is theirs: a store read), and what ``HostRunner._build`` does
  for a person before it builds the agent: ``_scope`` (the hook), the shared people, the
  session's owner (a store read), ``_host`` with the scope.

Prints the CPU time per request of each path, the median of ``--runs`` runs of ``--requests``
requests (the paths alternated), and the difference (goal: <= 0.2 ms).

Usage: python benchmarks/people.py [--users 100] [--groups 5] [--requests 20000] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

GOAL_MS = 0.2


def config_of(users: int, groups: int, home: Path) -> dict[str, Any]:
    """A configuration with ``users`` people in ``groups`` groups and an allow-list of guests."""
    group_names = [f"group{g}" for g in range(groups)]
    section: dict[str, Any] = {
        "platforms": {
            "hooks": {
                "adapter": "webhook",
                "port": 0,
                "secret": "s",
                "deliver_url": "http://127.0.0.1:9/hook",
                "allowed_users": [f"guest{n}" for n in range(20)],
            }
        },
        "groups": {
            name: {
                "share_sessions": g == 0,
                "toolsets": ["file", "memory", "todo", "session_search", "terminal"][: 5 - g % 2],
                **({"model": f"model-{g}"} if g % 2 else {}),
                **({"approvals": "manual"} if g == 1 else {}),
            }
            for g, name in enumerate(group_names)
        },
        "users": {
            f"person{n:03d}": {
                "ids": [f"hooks:U{n:05d}", f"api:person{n:03d}"],
                "groups": group_names[n % groups : n % groups + 1 + n % 2],
                **({"toolsets": ["file", "memory", "todo"]} if n % 3 == 0 else {}),
                **({"max_turns": 20} if n % 4 == 0 else {}),
                **({"sandbox": {"network": True}} if n % 5 == 0 else {}),
            }
            for n in range(users)
        },
        "guests": {"toolsets": ["file"], "max_turns": 10},
    }
    return {
        "toolsets": ["file", "memory", "todo", "session_search", "terminal", "skills"],
        "terminal": {"sandbox": "workspace"},
        "gateway": section,
    }


def build_paths(
    users: int, groups: int, active: int, home: Path
) -> tuple[Callable[[int], Any], ...]:
    """The two request paths, each a function of the request's number, cycling through
    ``active`` senders (a fifth of them guests)."""
    from hermes_gateway.core import NOT_FOR_GATEWAY, workspace_name
    from hermes_gateway.hookspecs import PLATFORM_ADAPTERS_HOOK
    from hermes_gateway.platforms import InboundMessage
    from hermes_gateway.serve import build

    from hermes_core.testing import make_runner
    from hermes_hookspecs import AgentTask, SessionInfo, check_person

    config = config_of(users, groups, home)
    plugins = ["gateway", "file", "memory", "todo", "session_search", "terminal", "skills"]
    runner = make_runner(plugins=plugins, home=home, config=config)
    store = runner.host.session_store
    factories = {
        name: entry.value
        for name, entry in runner.host.registry.named(PLATFORM_ADAPTERS_HOOK).items()
    }
    core = build(home, config, runner, factories, lambda line: None, session_store=lambda: store)
    platform = core.settings.platforms["hooks"]
    guests = min(20, active // 5)
    senders = [f"U{n:05d}" for n in range(active - guests)] + [f"guest{n}" for n in range(guests)]
    messages = [InboundMessage("hooks", "c", user, "hello") for user in senders]
    sessions: list[str] = []
    for message in messages:
        person = core.person_of(message)
        session_id = f"session_bench{len(sessions):06d}"
        store.create_session(SessionInfo(id=session_id, source="hooks", person=person))
        sessions.append(session_id)
    workspaces = home / "workspaces"

    def without_people(n: int) -> Any:
        i = n % len(messages)
        message = messages[i]
        if not platform.allows(message.user_id) and not message.user_id.startswith("U"):
            raise PermissionError(message.user_id)
        folder = os.path.join(workspaces, workspace_name(message.platform, message.user_id))
        if not os.path.isdir(folder):
            Path(folder).mkdir(parents=True, exist_ok=True)
        task = AgentTask(
            prompt=message.text,
            session_id=sessions[i],
            source=message.platform,
            exclude_toolsets=NOT_FOR_GATEWAY,
            config_overrides={"terminal": {"cwd": folder}},
        )
        return runner._host(task)

    def with_people(n: int) -> Any:
        i = n % len(messages)
        message = messages[i]
        person = core._admit(message)
        overrides = core._workspace(message, person)
        if not core._owns(person, sessions[i]):
            raise PermissionError(sessions[i])
        task = AgentTask(
            prompt=message.text,
            session_id=sessions[i],
            source=message.platform,
            exclude_toolsets=NOT_FOR_GATEWAY,
            config_overrides=overrides,
            person=person,
        )
        # what HostRunner._build does for a person before it builds the agent
        checked = check_person(task.person)
        scope = runner._scope(checked)
        host = runner._host(task, scope)
        stored = host.session_store.get_session(sessions[i])
        if stored is None or stored.person != checked:
            raise PermissionError(sessions[i])
        named = (*task.shared_people, *scope.shared_people)
        tuple(sorted({str(check_person(p)) for p in named} - {checked}))
        return host

    return without_people, with_people


def cpu_per_request(path: Callable[[int], Any], requests: int) -> float:
    """Milliseconds of CPU per request over ``requests`` calls of ``path``."""
    start = time.process_time()
    for n in range(requests):
        path(n)
    return (time.process_time() - start) * 1000 / requests


def main(argv: list[str] | None = None) -> int:
    """Run the measurement and print it; exit 1 when the goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--groups", type=int, default=5)
    parser.add_argument("--active", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hermes-bench-people-") as tmp:
        without_people, with_people = build_paths(args.users, args.groups, args.active, Path(tmp))
        for path in (without_people, with_people):  # warm: caches filled, folders made
            cpu_per_request(path, 2 * args.active)
        base: list[float] = []
        people: list[float] = []
        for _ in range(args.runs):
            base.append(cpu_per_request(without_people, args.requests))
            people.append(cpu_per_request(with_people, args.requests))
    b, p = statistics.median(base), statistics.median(people)
    added = p - b
    print(
        f"{args.users} people in {args.groups} groups; {args.active} senders writing (a fifth "
        f"guests); {args.requests} requests x {args.runs} runs (medians, CPU per request)"
    )
    print(f"  without people: {b * 1000:8.1f} us   (runs: {_runs(base)})")
    print(f"  with people:    {p * 1000:8.1f} us   (runs: {_runs(people)})")
    verdict = "ok" if added <= GOAL_MS else "over the goal"
    print(
        f"  added:          {added * 1000:8.1f} us   (goal <= {GOAL_MS * 1000:.0f} us: {verdict})"
    )
    return 0 if added <= GOAL_MS else 1


def _runs(values: list[float]) -> str:
    return ", ".join(f"{v * 1000:.1f}" for v in values)


if __name__ == "__main__":
    sys.exit(main())
