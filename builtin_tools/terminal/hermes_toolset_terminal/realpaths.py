"""Where paths really lead inside an environment that is not this machine: one POSIX shell
script run through :meth:`Environment.run` follows every symlink of each path (``realpath -m``
when the sandbox has it, else a loop over the path's parts with ``readlink``, which busybox has
too). Shared by the terminal's delete-operand check and the file tools' path checks."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["RealPaths", "is_local", "lexical", "real_paths"]

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
