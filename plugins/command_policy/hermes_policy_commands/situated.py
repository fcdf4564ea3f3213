"""A command decided where it runs: the one code path of the terminal tool and of ``hermes
approvals check``.

:func:`situation` works out the facts a decision depends on from the configuration and the
environment: the home folder, the workspace, the folder the command starts in (when relative
paths there are not the workspace's), hermes's home, the sandbox's walls (``sandbox``: the
parent's environment and the home folder hidden; ``offline``: no network) and the paths of the
home folder ``terminal.sandbox.home_allow`` adds. :func:`judge_command` decides a command in a
:class:`Situation`: the policy's findings, and again for every recursive delete whose operand a
symlink leads elsewhere (``rm -rf build/`` with ``build`` a link to the home folder).
"""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .engine import Context, Finding, builtin_rules, strictest
from .policy import Policy, Verdict, decide, default_policy
from .shell import UNKNOWN

__all__ = ["Situation", "judge_command", "local_files", "situation", "started_in"]

_DELETERS = ("rm", "rmdir")


@dataclass(frozen=True)
class Situation:
    """Where a command runs, as far as its decision depends on it.

    :param home: the home folder.
    :param workspace: the workspace (relative paths are inside it unless ``cwd`` says not).
    :param cwd: the folder the command starts in when relative paths there are *not* the
        workspace's (``/``, the home folder, a system folder, outside the workspace).
    :param hermes_home: hermes's own folder.
    :param walls: the sandbox's walls around the command (``sandbox``, ``offline``).
    :param home_allow: paths of the home folder (``~/...``) commands may see besides the
        toolchains'.
    :param base: the folder script files are read from (the start folder, else the
        workspace).
    """

    home: str
    workspace: str
    cwd: str | None
    hermes_home: str
    walls: frozenset[str] = frozenset()
    home_allow: tuple[str, ...] = ()
    base: str | None = None

    @property
    def context(self) -> Context:
        """The facts the rules see."""
        return Context(self.home, self.workspace, self.hermes_home, self.walls, self.home_allow)


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name) if isinstance(config, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _sandbox_facts(
    config: Mapping[str, Any], sandboxed: bool | None
) -> tuple[bool, bool, tuple[str, ...]]:
    """Whether commands run in the sandbox, whether it lets them reach the network, and the
    ``home_allow`` paths; the sandbox's own reading of ``terminal.sandbox`` (none when the
    sandbox distribution is not installed or its settings are malformed)."""
    try:
        from hermes_env_sandbox import settings_from_config
    except ImportError:
        return bool(sandboxed), True, ()
    try:
        settings = settings_from_config(config)
    except ValueError:
        return False, True, ()
    if sandboxed is None:  # as the local backend would run it (it refuses when it cannot)
        backend = _section(config, "terminal").get("backend") or "local"
        sandboxed = backend == "local" and settings.enabled
    allowed = tuple(a.path for a in settings.home_allow if a.path.startswith("~"))
    return sandboxed, settings.network, allowed


def situation(
    config: Mapping[str, Any],
    *,
    env_cwd: str | None = None,
    workdir: str | None = None,
    home: str | None = None,
    hermes_home: str | None = None,
    sandboxed: bool | None = None,
) -> Situation:
    """The situation of a command run by the terminal tool under ``config``.

    :param env_cwd: the environment's current folder (default: ``terminal.cwd``, else this
        process's folder). The workspace is ``terminal.cwd``, else this process's folder, as
        for the local backend, however far the session moved.
    :param workdir: the tool call's ``workdir`` (relative to ``env_cwd``).
    :param home: the home folder (default ``$HOME``).
    :param hermes_home: hermes's folder (default ``$HERMES_HOME``).
    :param sandboxed: whether commands run in the sandbox (default: as the local backend would
        run them under ``config``).
    """
    home = os.environ.get("HOME", "") if home is None else home
    hermes_home = os.environ.get("HERMES_HOME", "") if hermes_home is None else hermes_home
    root = _section(config, "terminal").get("cwd")
    root = posixpath.normpath(os.path.expanduser(root)) if isinstance(root, str) and root else ""
    if env_cwd is None:
        env_cwd = root or os.getcwd()
    start = _start_folder(env_cwd, workdir, root, home)
    base = start or (workdir if workdir else env_cwd)
    inside, network, allowed = _sandbox_facts(config, sandboxed)
    walls = frozenset({"sandbox", *(() if network else ("offline",))}) if inside else frozenset()
    workspace = root or os.getcwd()  # where the environment started: it stays the workspace
    return Situation(home, workspace, start, hermes_home, walls, allowed, base)


def started_in(config: Mapping[str, Any], folder: str | None) -> Mapping[str, Any]:
    """``config`` with the terminal started in ``folder`` (``terminal.cwd``, as ``hermes chat
    --workdir`` sets it); ``config`` itself when ``folder`` is ``None``."""
    if folder is None:
        return config
    return {**config, "terminal": {**_section(config, "terminal"), "cwd": folder}}


def _start_folder(current: str | None, workdir: str | None, root: str, home: str) -> str | None:
    """The folder the command starts in, when relative paths there are *not* the workspace's
    (the session moved to ``/``, the home folder, a system folder or outside ``terminal.cwd``);
    ``None`` when relative paths stay inside the workspace."""
    base = current if isinstance(current, str) else None
    if workdir:
        base = posixpath.normpath(posixpath.join(base or "", os.path.expanduser(str(workdir))))
    if not base or not base.startswith("/"):
        return None if not workdir else str(workdir)
    if base in ("/", home.rstrip("/")) or decide(f"rm -r {base}", home=home).decision == "never":
        return base
    if root and base != root and not base.startswith(root.rstrip("/") + "/"):
        return base
    return None


def local_files(base: str | None) -> Callable[[str], str | None]:
    """A reader of this machine's files (``~`` expanded, relative ones from ``base``): what the
    terminal tool reads through a local environment, for ``hermes approvals check``."""

    def read(path: str) -> str | None:
        path = os.path.expanduser(path) if path.startswith("~") else path
        if not path.startswith("/") and base:
            path = posixpath.join(base, path)
        try:
            with open(path, "rb") as handle:
                return handle.read(1_000_000).decode("utf-8", "replace")
        except (OSError, ValueError):
            return None

    return read


def judge_command(
    command: str,
    where: Situation,
    policy: Policy | None = None,
    *,
    read_script: Callable[[str], str | None] | None = None,
    env: Any = None,
    workdir: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> Verdict:
    """Decide ``command`` in ``where``: the policy's verdict, with the findings of every
    recursive delete whose operand really leads elsewhere added (worked out in ``env``, whose
    files they are, from ``workdir`` under ``config``: this machine's when ``env`` is ``None``);
    an operand that cannot be resolved asks."""
    from .paths import resolve_deletes

    policy = policy or default_policy()
    options: dict[str, Any] = {"home": where.home, "cwd": where.cwd, "workspace": where.workspace}
    options.update(hermes_home=where.hermes_home, walls=where.walls, home_allow=where.home_allow)
    verdict = decide(command, policy, read_script=read_script, **options)
    deletes = _delete_operands(verdict.commands)
    if verdict.decision == "never" or not deletes:
        return verdict
    if len(deletes) > 64:
        return _with(verdict, [_uncheckable(command)])
    if env is None:  # this machine, from the workspace
        env, workdir, config = (
            _Local(where.workspace),
            where.base,
            {"terminal": {"cwd": where.workspace}},
        )
    resolved = resolve_deletes(env, deletes, workdir, config or {})
    found: list[Finding] = []
    for path in deletes:
        if path not in resolved:
            return _with(verdict, [_uncheckable(command)])
        real = resolved[path]
        if real is not None:
            again = decide("rm -rf -- " + shlex.quote(real), policy, **options)
            found += [Finding(f.rule, f.text) for f in again.asked]
    return _with(verdict, found)


class _Local:
    """This machine, as :func:`paths.resolve_deletes` sees a local environment."""

    name = "local"

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd


def _with(verdict: Verdict, more: Sequence[Finding]) -> Verdict:
    if not more:
        return verdict
    findings = list(verdict.findings) + list(more)
    findings.sort(key=lambda f: ("never", "ask", "allow").index(f.decision))
    return Verdict(strictest(findings), tuple(findings), verdict.commands)


def _delete_operands(commands: Sequence[Any]) -> list[str]:
    """The paths the recursive deletes of a command name (``rm -r``, ``rsync --delete``), from
    the folder the command starts in; a part only known at run time is cut off."""
    out: list[str] = []
    for simple in commands:
        argv = simple.argv
        name = posixpath.basename(argv[0]) if argv else ""
        flags = [a for a in argv[1:] if a.startswith("-")]
        recursive = name in _DELETERS and any(
            a.startswith("--rec") or (not a.startswith("--") and ("r" in a or "R" in a))
            for a in flags
        )
        if not (recursive or (name == "rsync" and any(a.startswith("--del") for a in flags))):
            continue
        operands = [a for a in argv[1:] if not a.startswith("-")]
        for path in operands[-1:] if name == "rsync" else operands:
            path = path.split(UNKNOWN, 1)[0]
            cwd = simple.cwd
            if path and cwd and UNKNOWN not in cwd and not path.startswith(("/", "~")):
                path = posixpath.join(cwd, path)
            if path:
                out.append(path)
    return list(dict.fromkeys(out))


def _uncheckable(command: str) -> Finding:
    rule = next(r for r in builtin_rules() if r.id == "uncheckable")
    return Finding(rule, command)
