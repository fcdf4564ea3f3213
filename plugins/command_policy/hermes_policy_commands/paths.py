"""Where paths really lead, worked out where the files are (every symlink followed), and which
policy rule a file write falls under.

:func:`real_paths` runs one POSIX shell script through :meth:`Environment.run` in an environment
that is not this machine (``realpath -m`` when there is one, else a loop over the path's parts with
``readlink``, which busybox has too); :func:`resolve_deletes` maps the operands of a delete command
to where they lead (``os.path.realpath`` locally), so ``rm -rf build/`` with ``build`` a symlink to
the home folder is judged as deleting the home folder. Shared by the terminal's delete check and the
file tools' path checks. :func:`write_concern` is the rule (if any) that writing one file falls
under, judged by the same rules as a shell redirection to it.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["RealPaths", "is_local", "lexical", "real_paths", "resolve_deletes", "write_concern"]


_RESOLVER = r"""(
__hermes_real() {
  __p=$1
  case $__p in "~") __p=$HOME ;; "~/"*) __p=$HOME/${__p#"~/"} ;; esac
  case $__p in /*) ;; *) __d=$(pwd -P) || return 1; __p=$__d/$__p ;; esac
  if __r=$(realpath -m -- "$__p" 2>/dev/null) && [ -n "$__r" ]; then
    printf '%s' "$__r"; return 0
  fi
  __o=; __rest=$__p; __n=0
  while [ -n "$__rest" ]; do
    __c=${__rest%%/*}
    case $__rest in */*) __rest=${__rest#*/} ;; *) __rest= ;; esac
    case $__c in
      ''|.) ;;
      ..) __o=${__o%/*} ;;
      *)
        if [ -L "$__o/$__c" ]; then
          __n=$((__n + 1)); [ "$__n" -le 40 ] || return 1
          __t=$(readlink -- "$__o/$__c") && [ -n "$__t" ] || return 1
          case $__t in /*) __o= ;; esac
          __rest=$__t/$__rest
        else
          __o=$__o/$__c
        fi ;;
    esac
  done
  printf '%s' "${__o:-/}"
}
printf 'home\037%s\036' "$HOME"
printf 'pwd\037%s\036' "$(pwd -P 2>/dev/null)"
for __p in {paths}; do
  if __r=$(__hermes_real "$__p"); then printf 'ok\037%s\036' "$__r"; else printf 'fail\037\036'; fi
done
)"""
_RECORD = re.compile(r"(home|pwd|ok|fail)\x1f([^\x1e]*)\x1e")


def is_local(env: Any) -> bool:
    """Whether the environment's files are this machine's files (the ``local`` backend), so
    :func:`os.path.realpath` answers and no script is needed."""
    return getattr(env, "name", "") == "local" and isinstance(getattr(env, "cwd", None), str)


@dataclass(frozen=True)
class RealPaths:
    """The script's answer.

    :param home: the environment user's home folder, when it printed a usable one.
    :param pwd: the folder the script ran in (symlinks followed), when usable.
    :param reals: one entry per asked path: where it leads, or ``None`` when that could not
        be worked out.
    """

    home: str | None
    pwd: str | None
    reals: list[str | None]


def _clean(path: str) -> str | None:
    """A resolved path as the script printed it; ``None`` when it is not a usable answer."""
    if not path.startswith("/") or "\ufffd" in path or "\n" in path:
        return None
    return posixpath.normpath(path)


def real_paths(env: Any, paths: Sequence[str], *, cwd: str | None = None) -> RealPaths | None:
    """Run the script in ``env`` (from ``cwd``) for ``paths``; ``None`` when it failed or its
    answer is incomplete (the callers then treat every path as unresolved)."""
    script = _RESOLVER.replace("{paths}", " ".join(shlex.quote(p) for p in paths))
    try:
        result = env.run(script, cwd=cwd, timeout=30)
    except Exception:  # any failure leaves every path unresolved: the callers then ask
        return None
    if result.exit_code != 0 or result.timed_out:
        return None
    records = _RECORD.findall(result.output)
    values = dict(r for r in records if r[0] in ("home", "pwd"))
    reals = [_clean(v) if kind == "ok" else None for kind, v in records if kind in ("ok", "fail")]
    if len(reals) != len(paths):
        return None
    return RealPaths(_clean(values.get("home", "")), _clean(values.get("pwd", "")), reals)


def lexical(path: str, pwd: str | None, home: str | None) -> str:
    """``path`` made absolute from ``pwd`` with ``~`` expanded and ``.``/``..`` folded, symlinks
    not followed; ``""`` when it needs a ``pwd`` or ``home`` that is unknown."""
    if path == "~" or path.startswith("~/"):
        if not home:
            return ""
        path = home + path[1:]
    if not path.startswith("/"):
        if not pwd:
            return ""
        path = posixpath.join(pwd, path)
    return posixpath.normpath(path)


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name) if isinstance(config, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _classify(lexical: str, real: str, root: str | None) -> str | None:
    """``None`` when ``real`` needs no second look (strictly inside the working folder, or no
    symlink on the way); else ``real``, for the checker to judge."""
    if root:
        top = root.rstrip("/")
        if real != root and (not top or real.startswith(top + "/")):
            return None
    return None if real == lexical else real


def resolve_deletes(
    env: Any, paths: Sequence[str], workdir: str | None, config: Mapping[str, Any]
) -> dict[str, str | None]:
    """Map each delete operand (relative ones from the folder the command starts in: the
    environment's current folder, or ``workdir`` from it) to the real path the checker must
    see as well, or to ``None``; operands that could not be resolved are left out."""
    if is_local(env):
        return _resolve_local(env, paths, workdir, config)
    return _resolve_remote(env, paths, workdir)


# --- the local environment --------------------------------------------------------------------


def _resolve_local(
    env: Any, paths: Sequence[str], workdir: str | None, config: Mapping[str, Any]
) -> dict[str, str | None]:
    base = str(env.cwd)
    if workdir:
        base = os.path.join(base, os.path.expanduser(str(workdir)))
    start = str(_section(config, "terminal").get("cwd") or "").strip()
    try:
        start = os.path.abspath(os.path.expanduser(start)) if start else os.getcwd()
        root: str | None = os.path.realpath(start)
    except (OSError, ValueError):
        root = None
    answers: dict[str, str | None] = {}
    for path in paths:
        try:
            joined = os.path.join(base, os.path.expanduser(path))
            # realpath from the unfolded path: `link/..` is the parent of the link's target
            real = os.path.realpath(joined)
            lexical = os.path.normpath(joined)
        except (OSError, ValueError, TypeError):
            continue  # left out: the checker asks
        answers[path] = _classify(lexical, real, root)
    return answers


# --- every other environment: a shell script where the files are ---------------------------


def _resolve_remote(env: Any, paths: Sequence[str], workdir: str | None) -> dict[str, str | None]:
    reported = getattr(env, "home_cwd", None)
    start = reported if isinstance(reported, str) and reported.startswith("/") else None
    answer = real_paths(env, [start or "/", *paths], cwd=workdir)
    if answer is None:
        return {}
    root = answer.reals[0] if start else None
    resolved: dict[str, str | None] = {}
    for path, real in zip(paths, answer.reals[1:], strict=True):
        if real is not None:
            resolved[path] = _classify(lexical(path, answer.pwd, answer.home), real, root)
    return resolved


def write_concern(path: str, home: str | None = None) -> tuple[str, str, str] | None:
    """The rule writing the file at ``path`` falls under, as ``(rule id, justification,
    decision)``, judged as the shell redirection ``: > path`` would be; ``None`` when writing it
    needs no approval."""
    from .policy import decide

    verdict = decide(": > " + shlex.quote(path), home=home or os.environ.get("HOME", ""))
    if verdict.decision == "allow" or not verdict.asked:
        return None
    first = verdict.asked[0]
    return (first.rule.id, first.rule.justification, first.decision)
