"""The checks every file tool makes before it touches a file, and the approvals it asks for.

- Writing (``write_file``, ``patch``) outside the workspace, through a symlink that leaves it,
  to a path that cannot be resolved, or to a sensitive path needs approval.
- Reading a file that holds secrets needs approval (``patch`` reads too, so it is checked both
  ways).
- Where the environment runs commands in a sandbox, the file tools see what a command sees:
  a path commands do not see (the home folder but for the workspace and the allowed toolchain
  folders) needs approval to read or write, and a path the sandbox hides by name (credential
  folders, hermes's home, ``terminal.sandbox.hide``) is refused.

One request is made per file. Its key names the rules *and* the resolved target
(``file:write-outside-workspace:/srv/app/x``), so a ``session`` decision for one path approves
that path only. A refusal is :func:`hermes_hookspecs.blocked` text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hermes_hookspecs import SightedEnvironment, ToolContext, ToolError, blocked

from .resolve import Place, Resolution, resolve
from .sensitive import Concern, read_concerns, write_concerns

__all__ = ["approval_key", "check", "read_problems", "sight_problems", "write_problems"]

UNRESOLVED = "path-unresolved"
OUTSIDE = "write-outside-workspace"
UNSEEN = "outside-sandbox-view"
HIDDEN = "sandbox-hidden"


def write_problems(place: Place, resolution: Resolution) -> list[Concern]:
    """Why writing ``place`` needs approval (empty: it does not)."""
    problems: list[Concern] = []
    if place.real is None or resolution.workspace is None:
        what = "the path" if place.real is None else "the workspace folder"
        problems.append(
            Concern(UNRESOLVED, f"{what} cannot be resolved, so where the write lands is unknown")
        )
    elif not resolution.inside(place.real):
        how = " through a symlink" if resolution.inside(place.lexical) else ""
        problems.append(
            Concern(OUTSIDE, f"writes outside the workspace {resolution.workspace}{how}")
        )
    problems += write_concerns(
        [place.lexical, place.real], home=resolution.home, hermes_homes=resolution.hermes_homes
    )
    return problems


def read_problems(place: Place, resolution: Resolution) -> list[Concern]:
    """Why reading ``place`` needs approval (empty: it does not)."""
    problems = read_concerns(
        [place.lexical, place.real], home=resolution.home, hermes_homes=resolution.hermes_homes
    )
    if place.real is None and not problems:
        problems.append(
            Concern(UNRESOLVED, "the path cannot be resolved, so which file is read is unknown")
        )
    return problems


def sight_problems(env: Any, place: Place) -> list[Concern]:
    """Why touching ``place`` needs approval because commands in ``env``'s sandbox do not see
    it (empty: they do, or ``env`` has no sandbox); raise a :func:`blocked` refusal when the
    sandbox hides it by name. The file tools see the world a command sees."""
    if not isinstance(env, SightedEnvironment):
        return []
    spellings = [p for p in dict.fromkeys([place.lexical, place.real or ""]) if p]
    try:
        sights = {env.path_sight(p) for p in spellings}
    except Exception as exc:  # the sandbox cannot say: ask rather than guess
        return [Concern(UNSEEN, f"what the sandbox shows there cannot be told ({exc})")]
    if "hidden" in sights:
        raise ToolError(
            blocked(
                HIDDEN,
                "the sandbox hides this path from every command (a credential folder, hermes's "
                "home or terminal.sandbox.hide), and the file tools do not reach it either",
                place.target,
            )
        )
    if "unseen" in sights:
        return [
            Concern(
                UNSEEN,
                "lies outside the workspace and the folders of the home folder that commands "
                "see (terminal.sandbox.home_allow adds one)",
            )
        ]
    return []


def approval_key(problems: Sequence[Concern], target: str) -> str:
    """The key a decision about ``problems`` on ``target`` is remembered under."""
    return "file:" + "+".join(sorted({p.rule for p in problems})) + ":" + target


def _merge(*groups: list[Concern]) -> list[Concern]:
    merged: list[Concern] = []
    for group in groups:
        merged += [c for c in group if all(m.rule != c.rule for m in merged)]
    return merged


def check(
    ctx: ToolContext,
    env: Any,
    paths: Sequence[str],
    *,
    write: bool,
    read: bool = False,
    config: Mapping[str, Any] | None = None,
) -> list[Place]:
    """Resolve ``paths`` and ask for approval of every one that needs it; raise a
    :class:`ToolError` with :func:`blocked` text at the first one refused. Returns the places,
    so the caller works on the resolved paths it checked."""
    resolution = resolve(env, paths, ctx.config if config is None else config)
    for place in resolution.places:
        groups = [sight_problems(env, place)]
        if write:
            groups.append(write_problems(place, resolution))
        if read or not write:
            groups.append(read_problems(place, resolution))
        problems = _merge(*groups)
        if problems:
            ask(ctx, place, problems, "write" if write else "read")
    return resolution.places


def ask(ctx: ToolContext, place: Place, problems: Sequence[Concern], verb: str) -> None:
    """Ask about one path; return when approved, raise a refusal otherwise."""
    target = place.target
    rules = sorted({p.rule for p in problems})
    described = "; ".join(p.description for p in problems)
    shown = target if place.given in (target, "") else f"{target} (given as {place.given})"
    approved = ctx.approve(
        f"{ctx.tool_name or 'file tool'}: {verb} {shown}",
        "; ".join(f"{p.description} (rule {p.rule})" for p in problems),
        key=approval_key(problems, target),
        path=place.given,
        target=target,
        rules=rules,
    )
    if not approved:
        raise ToolError(blocked("+".join(rules), f"not approved: {described}", target))
