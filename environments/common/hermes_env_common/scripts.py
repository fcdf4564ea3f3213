"""The POSIX shell text :class:`~hermes_env_common.ShellEnvironment` runs in the sandbox: the frame
around every script (pid line, ``EXIT`` trap, end marker), the restoring and saving of the shell
state, file transfer, background processes, killing process trees and tagged processes, and the
lifeline. Pure functions of their arguments; everything works in bash, dash and busybox ``sh``."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence

__all__ = [
    "KILL_FUNCS",
    "LEFTOVER_NOTE",
    "claim_state",
    "enter_cwd",
    "frame",
    "kill_everything",
    "kill_tree",
    "lifeline",
    "prepare",
    "read_file",
    "restore_state",
    "start_background",
    "refresh_background",
    "kill_background",
    "write_file",
    "write_state_env",
]

LEFTOVER_NOTE = (
    "\n[hermes: stopped processes this command left running; "
    "run long-lived processes with background=true]\n"
)
"""Appended to a command's output when it left processes running (they are killed)."""


def q(text: str) -> str:
    """``text`` quoted for the shell."""
    return shlex.quote(text)


# kill signal $1 to process group $2 and to the process tree under pid $2 (via /proc, where the
# processes did not stay in the group); numeric signals and `kill -N -PGID` work in bash, dash
# and busybox alike
KILL_FUNCS = r"""
__hermes_tree() {
  for __hermes_c in $(cat /proc/$2/task/*/children 2>/dev/null); do
    __hermes_tree "$1" "$__hermes_c"
  done
  kill -$1 $2 2>/dev/null
}
__hermes_kill() { kill -$1 -$2 2>/dev/null; __hermes_tree "$1" "$2"; }
__hermes_alive() {
  if [ -r /proc/$1/stat ]; then
    __hermes_s=$(sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f1)
    [ -n "$__hermes_s" ] && [ "$__hermes_s" != Z ] && [ "$__hermes_s" != X ]
  else
    kill -0 "$1" 2>/dev/null
  fi
}
"""
"""Shell functions: ``__hermes_kill SIG PID`` (the group and the tree), ``__hermes_alive PID``."""

# in the EXIT trap of a command: note child processes still running (they are killed after the
# end marker); reads /proc with builtins only, so it costs no process
_LEFTOVER_CHECK = r"""  __hermes_kids=
  read -r __hermes_kids < /proc/$$/task/$$/children 2>/dev/null
  for __hermes_c in $__hermes_kids; do
    read -r __hermes_s < /proc/$__hermes_c/stat 2>/dev/null || continue
    case "${__hermes_s##*) }" in
      Z*|X*) ;;
      *) printf '%s' "$__hermes_note"; break ;;
    esac
  done
"""


# --- the frame ----------------------------------------------------------------------------------


def frame(body: str, nonce: str, *, merge: bool, end_body: str = "", after_marker: str = "") -> str:
    """``body`` framed for :class:`~hermes_env_common.reader.MarkerReader`: the shell prints its
    pid first; an ``EXIT`` trap runs ``end_body`` (``$__hermes_rc`` holds the status), prints the
    end marker with the status, then runs ``after_marker``. ``merge`` sends stderr to stdout."""
    return (
        ("exec 2>&1\n" if merge else "")
        + f"printf '\\036HPID{nonce} %s\\n' \"$$\"\n"
        + "__hermes_end() {\n  __hermes_rc=$?\n  trap - EXIT\n"
        + end_body
        + f"  printf '\\n\\036HEND{nonce} %s\\n' \"$__hermes_rc\"\n"
        + after_marker
        + '  exit "$__hermes_rc"\n}\n'
        + "trap __hermes_end EXIT\n"
        + body
        + "\n"
    )


# --- start-up and state -------------------------------------------------------------------------


def prepare(workdir: str | None) -> str:
    """Make the private state folder, enter ``workdir`` (made when missing; the home folder when
    ``None``) and print ``state=``, ``cwd=`` and ``shell=`` lines. Exit 91: cannot enter it."""
    enter = (
        f'w={q(workdir)}\nmkdir -p -- "$w" 2>/dev/null\n'
        'cd -- "$w" || { rm -rf -- "$S"; exit 91; }\n'
        if workdir
        else 'cd || cd / || { rm -rf -- "$S"; exit 91; }\n'
    )
    return (
        "umask 077\n"
        'S=$(mktemp -d "${TMPDIR:-/tmp}/hermes-env.XXXXXX") || exit 90\n'
        "umask 022\n"
        f"{enter}"
        "printf 'state=%s\\n' \"$S\"\n"
        "printf 'cwd=%s\\n' \"$(pwd)\"\n"
        "printf 'shell=%s\\n' \"$(command -v bash 2>/dev/null || echo /bin/sh)\"\n"
    )


def write_state_env(state_dir: str) -> str:
    """Write the input (``export`` lines) to the saved state every command restores."""
    return f"umask 077\ncat > {q(state_dir + '/env')} || exit 1\n"


def restore_state(
    *,
    state_dir: str,
    home_cwd: str,
    env_id: str,
    cwd: str | None,
    env: Sequence[tuple[str, str]],
) -> tuple[str, str]:
    """Shell text that restores the saved state, tags the shell with ``HERMES_ENV_ID`` and
    applies the one-off ``cwd``/``env`` (names already checked), and the text the ``EXIT`` trap
    runs to save the state again (when ``$__hermes_save`` is 1) and note leftover processes."""
    lines = [
        "__hermes_save=0",
        f"__hermes_note={q(LEFTOVER_NOTE)}",
        f"S={q(state_dir)}",
        f"HERMES_ENV_ID={env_id}; export HERMES_ENV_ID",
        '[ -r "$S/env" ] && . "$S/env" >/dev/null 2>&1',
        f"__hermes_home={q(home_cwd or '/')}",
        'cd -- "${__HERMES_CWD:-$__hermes_home}" 2>/dev/null || cd -- "$__hermes_home" 2>/dev/null',
    ]
    restore_env: list[str] = []
    for index, (key, value) in enumerate(env):
        lines.append(
            f"__hermes_o{index}=${{{key}+x}}; __hermes_v{index}=${{{key}-}}; "
            f"{key}={q(value)}; export {key}"
        )
        restore_env.append(
            f'  if [ "${{{key}-}}" = {q(value)} ]; then if [ -n "$__hermes_o{index}" ]; '
            f"then {key}=$__hermes_v{index}; else unset {key}; fi; fi\n"
        )
    if cwd:
        lines.append(f"cd -- {q(cwd)} || exit 1")
    # the working directory travels with the exports, in __HERMES_CWD (no extra file)
    save_cwd = "" if cwd else "    __HERMES_CWD=$PWD; export __HERMES_CWD\n"
    end_body = (
        '  if [ "$__hermes_save" = 1 ]; then\n'
        + "".join("  " + line for line in restore_env)
        + save_cwd
        + '    export -p > "$S/env.$$" 2>/dev/null && mv -f "$S/env.$$" "$S/env"\n'
        + "  fi\n"
        + _LEFTOVER_CHECK
    )
    return "\n".join(lines) + "\n", end_body


def enter_cwd(state_dir: str, home_cwd: str) -> str:
    """Load the saved exports and enter the saved working directory (for file transfer)."""
    env_file = q(state_dir + "/env")
    return (
        f"[ -r {env_file} ] && . {env_file} >/dev/null 2>&1\n"
        f"__hermes_home={q(home_cwd or '/')}\n"
        'cd -- "${__HERMES_CWD:-$__hermes_home}" 2>/dev/null || cd -- "$__hermes_home"'
        " 2>/dev/null\n"
    )


# --- files --------------------------------------------------------------------------------------


def read_file(path: str) -> str:
    """``cat`` the file; exit 2 missing, 21 a directory, 13 unreadable, 5 read error."""
    return (
        f"p={q(path)}\n"
        '[ -e "$p" ] || exit 2\n[ -d "$p" ] && exit 21\n[ -r "$p" ] || exit 13\n'
        'cat -- "$p" 2>/dev/null || exit 5\n'
    )


def write_file(path: str, parent: str) -> str:
    """Stream the input into a temporary file beside ``path`` (the old mode kept) and rename it
    over ``path``; a symbolic link is written through. Exit 21 a directory, 13 cannot make the
    parent, 5 write error."""
    return (
        f"p={q(path)}\nd={q(parent)}\n"
        '[ -d "$p" ] && { echo "is a directory"; exit 21; }\n'
        'mkdir -p -- "$d" || exit 13\n'
        'if [ -L "$p" ]; then cat > "$p" || exit 5; exit 0; fi\n'
        't="$d/.hermes-write.$$"\n'
        'cat > "$t" || { rm -f "$t"; exit 5; }\n'
        'if [ -e "$p" ]; then m=$(stat -c %a -- "$p" 2>/dev/null) && chmod "$m" "$t"'
        " 2>/dev/null; fi\n"
        'mv -f -- "$t" "$p" || { rm -f "$t"; exit 5; }\n'
    )


# --- background processes -----------------------------------------------------------------------


def start_background(command: str, *, shell: str, base: str) -> str:
    """Start ``command`` under ``setsid`` (when there is one) with its output in ``base.out``,
    its pid in ``base.pid`` and, once it ends, its status in ``base.rc``."""
    inner = (
        f"trap 'echo $? > {q(base + '.rc.tmp')}; mv -f {q(base + '.rc.tmp')} "
        f"{q(base + '.rc')}' EXIT\neval {q(command)}\n"
    )
    launch = f"{q(shell)} -c {q(inner)} </dev/null >{q(base + '.out')} 2>&1 &"
    return (
        "if command -v setsid >/dev/null 2>&1; then\n  setsid "
        + launch
        + "\nelse\n  "
        + launch
        + f"\nfi\necho $! > {q(base + '.pid')}\n"
    )


def refresh_background(base: str, *, known_done: bool, bytes_read: int) -> str:
    """Print ``rc N``, ``running``, ``gone`` or ``done`` on the first line, then the output
    after the first ``bytes_read`` bytes."""
    if known_done:
        status = "echo done\n"
    else:
        status = (
            'if [ -f "$B.rc" ]; then printf \'rc %s\\n\' "$(cat "$B.rc")"\n'
            'else p=$(cat "$B.pid" 2>/dev/null)\n'
            '  if [ -n "$p" ] && __hermes_alive "$p"; then echo running\n'
            # it may have written its status and ended between the two checks
            '  elif [ -f "$B.rc" ]; then printf \'rc %s\\n\' "$(cat "$B.rc")"\n'
            "  else echo gone; fi\n"
            "fi\n"
        )
    return (
        KILL_FUNCS
        + f"B={q(base)}\n"
        + status
        + f'tail -c +{bytes_read + 1} "$B.out" 2>/dev/null\nexit 0\n'
    )


def kill_background(base: str) -> str:
    """TERM the group and tree of the process of ``base``, KILL what is left after about two
    seconds, and record 143 (or 137) as its status when it wrote none."""
    return (
        KILL_FUNCS
        + f"B={q(base)}\n"
        + '[ -f "$B.rc" ] && exit 0\np=$(cat "$B.pid" 2>/dev/null)\n[ -n "$p" ] || exit 0\n'
        + '__hermes_kill 15 "$p"\ni=0\n'
        + 'while __hermes_alive "$p" && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done\n'
        + 'c=143; __hermes_alive "$p" && c=137\n__hermes_kill 9 "$p"\n'
        + '[ -f "$B.rc" ] || echo $c > "$B.rc"\nexit 0\n'
    )


# --- killing ------------------------------------------------------------------------------------


def kill_tree(pid: int) -> str:
    """KILL process group ``pid`` and the tree under it."""
    return KILL_FUNCS + f"__hermes_kill 9 {int(pid)}\nexit 0"


def _kill_tagged(env_ids: Iterable[str], *, lifelines: bool) -> str:
    """Kill (twice, for processes forked meanwhile) every process whose environment or command
    line carries ``HERMES_ENV_ID=<id>`` for one of ``env_ids`` (and, with ``lifelines``, their
    lifelines). The command line counts so that the command shells themselves (which export the
    id after they started) are found too. One ``grep`` reads every process's files; the patterns
    are written so that they do not match their own text (``[D]``), so neither this script nor
    that ``grep`` finds itself."""
    ids = list(env_ids)
    patterns = [f"HERMES_ENV_I[D]={i}" for i in ids]
    if lifelines:
        patterns += [f"hermes-lifelin[e]-{i}" for i in ids]
    options = " ".join(f"-e {q(p)}" for p in patterns)
    return (
        "for n in 1 2; do\n"
        f"  for f in $(grep -l -s {options} /proc/[0-9]*/environ /proc/[0-9]*/cmdline); do\n"
        '    p=${f#/proc/}; p=${p%%/*}; [ "$p" = "$$" ] || kill -9 "$p" 2>/dev/null\n'
        "  done\ndone\n"
    )


def kill_everything(pid_files: Iterable[str], env_ids: Iterable[str], state_dir: str) -> str:
    """Kill the background groups whose pids are in ``pid_files``, every process tagged with one
    of ``env_ids``, and remove the state folder."""
    groups = " ".join(f'"$(cat {q(path)} 2>/dev/null)"' for path in pid_files)
    return (
        KILL_FUNCS
        + f'for p in {groups}; do [ -n "$p" ] && __hermes_kill 9 "$p"; done\n'
        + _kill_tagged(env_ids, lifelines=True)
        + f"rm -rf -- {q(state_dir)}\nexit 0\n"
    )


# --- the lifeline -------------------------------------------------------------------------------


def lifeline(env_id: str, state_dir: str, grace: float) -> str:
    """Wait for end of file on the input, then kill every process tagged ``env_id`` and, unless
    :func:`claim_state` claimed it within ``grace`` seconds, remove the state folder."""
    claim = q(f"{state_dir}/.claim-{env_id}")
    wait = f"sleep {grace:g}\n" if grace > 0 else ""
    return (
        f"# hermes-lifeline-{env_id}\n"
        "exec >/dev/null 2>&1\n"
        "trap '' HUP INT PIPE\n"
        "while read -r __hermes_line; do :; done\n"
        + _kill_tagged([env_id], lifelines=False)
        + wait
        + f"if [ -e {claim} ]; then rm -f -- {claim}; exit 0; fi\n"
        + f"rm -rf -- {q(state_dir)}\nexit 0\n"
    )


def claim_state(state_dir: str, old_env_id: str) -> str:
    """Claim the state folder from the lifeline of ``old_env_id``; make it again (empty, private)
    when that lifeline removed it already, and say ``reset``. Exit 92: the path is taken by
    something else."""
    s = q(state_dir)
    return (
        f"S={s}\n"
        'if [ -d "$S" ] && [ ! -L "$S" ] && [ -O "$S" ]; then\n'
        f'  : > "$S/.claim-{old_env_id}" || exit 92\n'
        "else\n"
        '  umask 077; mkdir -- "$S" 2>/dev/null || exit 92\n'
        "  echo reset\n"
        "fi\nexit 0\n"
    )
