"""Where the paths a delete command names really lead, worked out where the files are.

The checker reads ``rm -rf build/`` as deleting build output inside the working folder; when
``build`` is a symlink (or passes through a symlinked folder) the files deleted are elsewhere.
:func:`resolve_deletes` follows every symlink of each delete operand: in the local environment
with :func:`os.path.realpath` from the command's folder, in every other environment with a small
POSIX shell script run through :meth:`Environment.run` (``realpath -m`` when the sandbox has it,
else a loop over the path's parts with ``readlink``). The answer for each operand is the real
path when a symlink takes it outside the working folder (or to the folder itself), ``None``
when the operand is what it says; an operand missing from the answer could not be resolved and
the checker then asks (fail closed).
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["resolve_deletes"]


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name) if isinstance(config, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _is_local(env: Any) -> bool:
    return getattr(env, "name", "") == "local" and isinstance(getattr(env, "cwd", None), str)


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
    if _is_local(env):
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


def _clean(path: str) -> str | None:
    if not path.startswith("/") or "\ufffd" in path or "\n" in path:
        return None
    return posixpath.normpath(path)


def _lexical(path: str, pwd: str | None, home: str | None) -> str:
    if path == "~" or path.startswith("~/"):
        if not home:
            return ""
        path = home + path[1:]
    if not path.startswith("/"):
        if not pwd:
            return ""
        path = posixpath.join(pwd, path)
    return posixpath.normpath(path)


def _resolve_remote(env: Any, paths: Sequence[str], workdir: str | None) -> dict[str, str | None]:
    reported = getattr(env, "home_cwd", None)
    start = reported if isinstance(reported, str) and reported.startswith("/") else None
    asked = [start or "/", *paths]
    script = _RESOLVER.replace("{paths}", " ".join(shlex.quote(p) for p in asked))
    try:
        result = env.run(script, cwd=workdir, timeout=30)
        records = _RECORD.findall(result.output) if not result.timed_out else []
        if result.exit_code != 0:
            records = []
    except Exception:  # any failure leaves every operand unresolved: the checker then asks
        return {}
    values = dict(r for r in records if r[0] in ("home", "pwd"))
    answers = [_clean(v) if kind == "ok" else None for kind, v in records if kind in ("ok", "fail")]
    if len(answers) != len(asked):
        return {}
    root = answers[0] if start else None
    pwd = _clean(values.get("pwd", ""))
    home = _clean(values.get("home", ""))
    resolved: dict[str, str | None] = {}
    for path, real in zip(paths, answers[1:], strict=True):
        if real is not None:
            resolved[path] = _classify(_lexical(path, pwd, home), real, root)
    return resolved
