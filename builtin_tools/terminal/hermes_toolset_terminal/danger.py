"""Dangerous-command detection: the rules (data), a shell normaliser, and the checker.

The checker never runs anything. It reads a command the way a shell would, well enough to see
through the usual disguises, and matches every rule against each *view* of it:

- each simple command, with quotes and backslashes removed, ``$'…'`` decoded, ``$HOME``/``~``
  (``${HOME%/}``, ``~root``) and the literal home folder written ``~``, ``$IFS`` read as a
  space, brace lists expanded, variables assigned earlier in the same command substituted,
  ``$(echo …)``/``$(printf …)`` (and ``echo … | base64 -d``) folded into their output, the
  program written by its base name (``/bin/rm`` → ``rm``), GNU long-option abbreviations
  written in full, redirections appended as ``> target``/``>> target``, and paths resolved
  against the folder earlier ``cd`` commands moved to when it is not the working folder;
- each wrapper (``sudo``, ``env``, ``nohup``, ``nice``, ``timeout``, ``command``, ``exec``,
  ``xargs``, ``busybox``…, any number of them) with its options and the program it runs, then
  the command it wraps;
- each pipeline, its commands joined with `` | ``;
- the scripts hidden inside other commands, read recursively: ``bash -c``/``sh -c``, ``eval``,
  ``su -c``, ``ssh host …``, ``find -exec``, ``$( … )`` and backticks, ``<( … )``, heredocs and
  here-strings, text piped into a shell when it can be folded, the input of ``xargs``, the
  bodies of shell functions where they are called, the strings an interpreter's inline code
  runs, and script files (through a reader the caller passes);
- the command's *skeleton* (quoted text blanked out), for structural rules such as fork bombs;
- the delete operands (``rm -r``, ``find … -delete``/``-exec rm``, ``rsync --delete``
  destinations, and so ``xargs rm`` inputs that are known) written where they really lead,
  when the caller resolved them (:attr:`Normalised.deletes` lists them; ``resolved`` in
  :func:`normalise` maps them to the real path): ``rm -rf build/`` with ``build`` a symlink to
  the home folder is also seen as ``rm -rf ~/``;
- *notes*: facts no single view shows (``download-to-shell``, ``decode-to-shell``,
  ``pipe-to-shell``, ``root-shell``, ``uncheckable``), which the rules match too.

Rules are anchored at the program name (``^rm\\s``), so ``echo "rm -rf /"`` or
``grep -r 'rm -rf /' docs`` never match a delete rule. What the reader cannot follow (too deep,
unterminated quoting, more text than its budget, a script it cannot read) is noted
``uncheckable`` (fail closed) and read crudely once more, so hard blocks are still found. Time is
linear in the length of the command.

``RULES`` is plain data; :func:`rules_from_config` turns ``approvals.extra_patterns`` entries
into more rules, and :func:`check` applies ``approvals.allow`` to what is left.
"""

from __future__ import annotations

import base64
import binascii
import os
import posixpath
import re
import shlex
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

__all__ = [
    "RULES",
    "Finding",
    "Normalised",
    "Rule",
    "FolderLister",
    "ScriptReader",
    "MAX_DELETES",
    "UNCHECKABLE",
    "check",
    "compile_allow",
    "normalise",
    "rules_from_config",
    "scan",
    "sensitive_path",
]


# --- the rules ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One dangerous pattern.

    :param id: a short stable name, used as the approval cache key and shown to the model.
    :param description: what the pattern means, for people (shown when asking and when refusing).
    :param pattern: a regular expression searched in each view of the command (see the module
        docstring); ``scope="skeleton"`` searches the skeleton instead.
    :param hard: always refused, even with ``--yolo``; otherwise the command needs approval.
    :param source: ``builtin`` or ``config``.
    """

    id: str
    description: str
    pattern: str
    hard: bool = False
    scope: str = "command"
    source: str = "builtin"

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """The compiled pattern."""
        return re.compile(self.pattern)


@dataclass(frozen=True)
class Finding:
    """A rule that matched, and the normalised text it matched in."""

    rule: Rule
    text: str

    @property
    def hard(self) -> bool:
        return self.rule.hard

    @property
    def description(self) -> str:
        return self.rule.description


_SHELLS = r"(?:ba|da|z|k|mk|fi|c|tc|a|y|o|l)?sh|busybox\s+sh"
_INTERPRETERS = (
    r"python[\d.]*|pypy[\d.]*|perl|ruby|node|nodejs|deno|bun|php|lua|luajit|Rscript|julia"
    r"|tclsh|osascript|pwsh|powershell"
)
_DISK = (
    r"/dev/(?:sd[a-z]+\d*|hd[a-z]+\d*|vd[a-z]+\d*|xvd[a-z]+\d*|nvme\d+n\d+(?:p\d+)?"
    r"|mmcblk\d+(?:p\d+)?|r?disk\d+(?:s\d+)?|md\d+|dm-\d+|mapper/\S+|loop\d+|nbd\d+|sr\d+"
    r"|zram\d+|mem|kmem|port)"
)
_SYSTEM_DIRS = (
    r"bin|boot|dev|etc|home|lib|lib32|lib64|libx32|media|mnt|opt|proc|root|run|sbin|snap|srv"
    r"|sys|usr|var|Applications|Library|System|Users|Volumes|private"
    r"|usr/(?:bin|sbin|lib|lib32|lib64|libexec|include|share|local|src)"
    r"|var/(?:lib|log|cache|spool|mail|www|backups|opt)|private/(?:etc|var)"
)
_PROTECTED = (
    rf"(?:/|/\*|/\.\*|~|~/\*|~/\.\*|/home/[^/\s]+(?:/\*)?|/Users/[^/\s]+(?:/\*)?"
    rf"|/(?:{_SYSTEM_DIRS})(?:/\*)?|/[^/\s]*[*?\[][^/\s]*)"
)
_RECURSIVE = r"(?=(?:\S+\s+)*?(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)(?:\s|$))"
# An operand of ``rm -r`` that reaches outside the working folder: absolute, home, unresolved
# (``$X``), the folder itself (``.``, ``*``, ``./*``, ``.*``) or a ``..`` step.
_NOT_LOCAL = (
    r"(?:[/~$`]\S*|(?:\./)?\.{0,2}/?\*?|(?:\./)?\.\*|\.\./?|(?:\S*/)?\.\.(?:/\S*)?)(?=\s|$)"
)
_RAW_DEVICE = rf"(?:{_DISK}|/proc/sysrq-trigger)"
# Build output and caches inside the working folder, which ``rm -r`` may delete without asking
# (at any depth below it, never through a ``..`` step).
BUILD_OUTPUT = (
    r"(?!(?:\S*/)?\.\.(?:/|\s|$))(?:\./)?(?:[\w.@+-]+/)*?"
    r"(?:build|dist|out|target|node_modules|__pycache__|\.pytest_cache|\.mypy_cache|\.ruff_cache"
    r"|\.hypothesis|\.tox|\.nox|\.cache|\.next|\.nuxt|\.parcel-cache|\.turbo|\.svelte-kit"
    r"|\.angular|\.docusaurus|\.gradle|\.terraform|\.eggs|[\w.*-]*\.egg-info|coverage|htmlcov"
    r"|\.coverage|_build|tmp|\.tmp|temp|\.venv|venv|storybook-static|cmake-build-\w+)"
    r"(?:/\S*)?"
)
_FIND_DELETES = r"(?:-delete|-(?:exec|execdir|ok|okdir)\s+(?:rm|shred|unlink))(?:\s|$)"
_END = r"(?=\s|$)"
_GITOPTS = r"(?:(?:-C|-c|--git-dir|--work-tree|--namespace)\s+\S+\s+|--?[\w-]+(?:=\S+)?\s+)*+"
SYSTEM_CONFIG_PATHS = (
    r"/etc(?:/\S*)?|/boot(?:/\S*)?|/usr(?:/\S*)?|/s?bin(?:/\S*)?|/lib(?:32|64|x32)?(?:/\S*)?|/private/etc(?:/\S*)?|/var/spool/cron(?:/\S*)?"
    r"|/usr/lib/systemd/\S*|/lib/systemd/\S*|/Library/Launch(?:Agents|Daemons)(?:/\S*)?"
)
SSH_PATHS = r"(?:\S*/)?\.ssh(?:/\S*)?|(?:\S*/)?authorized_keys2?"
STARTUP_PATHS = (
    r"(?:\S*/)?\.(?:bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zshenv|zprofile"
    r"|zlogin|zlogout|kshrc|cshrc|tcshrc|login|inputrc|xprofile|xinitrc)"
    r"|(?:\S*/)?\.config/(?:fish/config\.fish|autostart(?:/\S*)?|systemd/user(?:/\S*)?)"
    r"|(?:\S*/)?Library/LaunchAgents(?:/\S*)?"
)
CREDENTIAL_PATHS = (
    r"(?:\S*/)?(?:\.netrc|\.pypirc|\.npmrc|\.yarnrc(?:\.yml)?|\.git-credentials|\.gitconfig"
    r"|\.pgpass|\.my\.cnf|\.terraformrc|\.boto|\.s3cfg|\.gem/credentials|\.cargo/credentials"
    r"(?:\.toml)?|\.aws(?:/\S*)?|\.azure(?:/\S*)?|\.config/gcloud(?:/\S*)?|\.config/gh(?:/\S*)?"
    r"|\.docker/config\.json|\.kube(?:/\S*)?|\.gnupg(?:/\S*)?|id_(?:rsa|dsa|ecdsa|ed25519)"
    r"(?:\.pub)?)"
)
ENV_FILE_PATHS = (
    r"(?:\S*/)?\.env(?![\w.-]*\.(?:example|sample|template|dist|defaults?)(?:\s|$))"
    r"(?:\.[\w.-]+)?"
    r"|(?:\S*/)?\.envrc"
)
HERMES_PATHS = r"(?:\S*/)?\.hermes(?:/\S*)?"
HISTORY_PATHS = (
    r"(?:\S*/)?\.(?:bash|zsh|sh|ksh|python|mysql|psql|sqlite|node_repl|lesshst|irb|rediscli)_?history"
    r"|(?:\S*/)?\.local/share/fish/fish_history|(?:\S*/)?\.histfile"
)

_DB_CLIENTS = (
    r"(?=.*\b(?:psql|pg_\w+|mysql|mariadb|sqlite3?|sqlcmd|duckdb|clickhouse(?:-client)?|cockroach"
    r"|cqlsh|mongo(?:sh)?|redis-cli|bq|snowsql|trino|presto|usql|"
    rf"{_INTERPRETERS}|rails|manage\.py|prisma|knex|flask|django-admin)\b)"
)


def _write_rule(rule_id: str, what: str, paths: str) -> Rule:
    """A rule for commands that write, delete or re-permission ``paths``: a redirection, a
    writing program naming it anywhere, ``sed -i``/``perl -i``, ``dd of=``, or the destination
    (last argument, or ``-t DIR``) of ``cp``/``install``/``ln``/``rsync``/``scp``."""
    p = f"(?:{paths})"
    return Rule(
        rule_id,
        f"writes to {what}",
        rf"(?:^|\s)>>?\s*{p}{_END}"
        rf"|^(?:tee|truncate|rm|unlink|shred|chmod|chown|chgrp|touch|mkdir|patch|ed|mv)\s"
        rf"(?:\S+\s+)*?{p}{_END}"
        rf"|^(?:sed|perl)\s(?=(?:\S+\s+)*?-[a-zA-Z]*i)(?:\S+\s+)*?{p}{_END}"
        rf"|^dd\s(?:\S+\s+)*?of={p}{_END}"
        rf"|^(?:cp|install|ln|rsync|scp)\s(?:\S+\s+)*?(?:(?:-t\s+|--target-directory=){p}{_END}"
        rf"|{p}(?:\s+[<>].*)?$)",
    )


HARD_RULES: tuple[Rule, ...] = (
    Rule(
        "delete-root",
        "recursive delete of /, a system folder or the home folder",
        rf"^rm\s{_RECURSIVE}(?:\S+\s+)*?{_PROTECTED}/?{_END}",
        hard=True,
    ),
    Rule(
        "find-delete-root",
        "find deleting from /, a system folder or the home folder",
        rf"^find\s+(?:-\S+\s+)*{_PROTECTED}/?\s(?:.*\s)?(?:-delete|-exec(?:dir)?\s+rm)\b",
        hard=True,
    ),
    Rule(
        "move-root",
        "moving /, a system folder or the home folder away",
        rf"^mv\s(?:\S+\s+)*?{_PROTECTED}/?\s+\S",
        hard=True,
    ),
    Rule(
        "rsync-delete-root",
        "rsync --delete into /, a system folder or the home folder",
        rf"^rsync\s(?=(?:\S+\s+)*?--del)(?:\S+\s+)+{_PROTECTED}/?$",
        hard=True,
    ),
    Rule(
        "mkfs",
        "making a file system (erases a disk)",
        r"^(?:mkfs(?:\.\w+)?|mke2fs|mkswap|mkdosfs|mkntfs|mkexfatfs|newfs(?:_\w+)?)(?:\s|$)",
        hard=True,
    ),
    Rule(
        "wipe-disk",
        "wiping a disk or partition",
        rf"^(?:wipefs|shred|blkdiscard)\s(?!(?:.*\s)?-n\b)(?:\S+\s+)*?{_DISK}{_END}",
        hard=True,
    ),
    Rule(
        "dd-disk",
        "dd writing to a raw disk",
        rf"^dd\s(?:\S+\s+)*?of={_RAW_DEVICE}{_END}",
        hard=True,
    ),
    Rule(
        "write-disk",
        "writing to a raw disk",
        rf"(?:^|\s)>>?\s*{_RAW_DEVICE}{_END}|^tee\s(?:\S+\s+)*?{_RAW_DEVICE}{_END}"
        rf"|^(?:cp|mv|install)\s(?:\S+\s+)+{_RAW_DEVICE}(?:\s+[<>].*)?$",
        hard=True,
    ),
    Rule(
        "fork-bomb",
        "fork bomb",
        r"(?:^|[\s;&|(])(?:function\s+)?([\w:.-]+)\s*(?:\(\s*\))?\s*\{\s*\1\s*\|\s*\1\s*&",
        hard=True,
        scope="skeleton",
    ),
    Rule(
        "kill-all",
        "killing every process (kill -1)",
        r"^(?:kill\s+(?:-1\s*$|(?:\S+\s+)+-1(?:\s|$))|killall5(?:\s|$))",
        hard=True,
    ),
    Rule(
        "shutdown",
        "shutting down or rebooting the machine",
        r"^(?:shutdown|reboot|halt|poweroff|(?:tel)?init\s+[06])(?:\s|$)"
        r"|^(?:systemctl|loginctl)\s(?:\S+\s+)*?(?:poweroff|reboot|halt|kexec)(?:\s|$)",
        hard=True,
    ),
)

APPROVAL_RULES: tuple[Rule, ...] = (
    Rule(
        "recursive-delete",
        "recursive delete (other than build output inside the working folder)",
        rf"^rm\s{_RECURSIVE}(?:(?![<>])\S+\s+)*?(?![-<>])(?!(?:{BUILD_OUTPUT}|\{{\}})(?:\s|$))\S",
    ),
    Rule(
        "find-delete",
        "find deleting files outside the working folder, or all of it",
        rf"^find\s+(?:-[HLP]\s+)*(?:(?:[^-(!\s]\S*\s+)*?(?!\./?\s){_NOT_LOCAL}|\./?(?=\s)"
        r"(?!.*\s-(?:i?name|i?path|i?wholename|i?regex|newer\S*|[acm]time|[acm]min|empty|size"
        r"|user|group|perm)\s))"
        rf"\s(?:.*\s)?{_FIND_DELETES}",
    ),
    Rule(
        "xargs-delete", "deleting files listed by xargs", r"^xargs\s(?:.*\s)?(?:rm|shred|unlink)\b"
    ),
    Rule(
        "world-writable",
        "making files world-writable",
        r"^chmod\s(?:\S+\s+)*?(?:0?[0-7]?[0-7]{2}[2367]|[ugoa]*[oa][ugoa]*[+=][rwxXstugo]*w"
        r"\S*|\S+,[ugoa]*[oa][ugoa]*[+=][rwxXst]*w\S*)(?:\s|$)",
    ),
    Rule(
        "setuid",
        "setting the setuid/setgid bit",
        r"^chmod\s(?:\S+\s+)*?(?:0?[2-7][0-7]{3}|[ugoa]*[+=][rwxX]*s\S*)(?:\s|$)",
    ),
    Rule(
        "chown-root",
        "recursive change of owner to root",
        r"^chown\s(?=(?:\S+\s+)*?(?:-[a-zA-Z]*R[a-zA-Z]*|--recursive)(?:\s|$))"
        r"(?:\S+\s+)*?(?:root|0)(?::\S*)?(?:\s|$)",
    ),
    Rule(
        "recursive-perms-system",
        "recursive permission change of a system folder",
        rf"^(?:chmod|chown|chgrp)\s(?=(?:\S+\s+)*?(?:-[a-zA-Z]*R|--recursive))"
        rf"(?:\S+\s+)*?{_PROTECTED}/?{_END}",
    ),
    Rule(
        "download-to-shell",
        "downloaded content run by a shell or interpreter",
        r"^download-to-shell$|^download-then-run$"
        rf"|^(?:{_SHELLS}|source|\.)\s(?:.*\s)?<\(\s*(?:curl|wget)\b"
        rf"|^(?:{_SHELLS}|{_INTERPRETERS})\s(?=(?:.*\s)?-\w*[ce]\s)(?=.*\$\(\s*(?:curl|wget)\b)",
    ),
    Rule(
        "decode-to-shell",
        "decoded (base64/hex) data run by a shell",
        r"^decode-to-shell$",
    ),
    Rule("pipe-to-shell", "text of unknown content piped into a shell", r"^pipe-to-shell$"),
    Rule(
        "uncheckable",
        "a command the checker cannot read completely (too deeply nested, unterminated quoting,"
        " or a script file that cannot be read)",
        r"^uncheckable$",
    ),
    Rule("root-shell", "starting a root shell", r"^root-shell$"),
    Rule(
        "script-dynamic-command",
        "a script (Python, or inline perl/ruby/node/php) runs a program, or deletes, moves,"
        " writes or re-permissions files, with names computed at run time",
        r"^script-dynamic-command: ",
    ),
    Rule(
        "script-dynamic-code",
        "a script runs code it builds or loads at run time (exec/eval of computed text,"
        " dynamic imports, reflection, native code, unpickling)",
        r"^script-dynamic-code: ",
    ),
    Rule(
        "interpreter-delete-tree",
        "an interpreter deleting a folder tree",
        # Python is read as Python (see python_code): its deletes are judged as rm -rf is
        rf"^(?!(?:python[\d.]*|pypy[\d.]*)\s)(?:{_INTERPRETERS})\s.*(?:\brmtree\b|\brm_rf?\b"
        r"|FileUtils\.(?:rm|remove)"
        r"|\brm(?:dir)?Sync\b|\bfs\.(?:promises\.)?rm(?:dir)?\b|remove_dir_all|RemoveAll"
        r"|File::Path|\bremove_tree\b|\brimraf\b|Remove-Item|\bdelete_tree\b)",
    ),
    Rule("eval-output", "eval of command output", r"^eval\s(?:.*)(?:\$\(|`)"),
    Rule(
        "dynamic-command",
        "program name computed at run time or hidden by wildcards",
        r"^(?:\$\(|`|\$\{?[A-Za-z_])|^(?!\[)\S*[*?]\S*(?:\s|$)",
    ),
    _write_rule("write-system-config", "system configuration", SYSTEM_CONFIG_PATHS),
    _write_rule("write-ssh", "~/.ssh (keys and SSH configuration)", SSH_PATHS),
    _write_rule("write-startup-file", "shell start-up files", STARTUP_PATHS),
    _write_rule("write-credentials", "credential files", CREDENTIAL_PATHS),
    _write_rule("write-env-file", "a .env file", ENV_FILE_PATHS),
    _write_rule("write-hermes-config", "hermes' own configuration", HERMES_PATHS),
    _write_rule("history-wipe", "the shell history", HISTORY_PATHS),
    Rule(
        "history-wipe-command",
        "wiping or switching off the shell history",
        r"^(?:history\s+(?:\S+\s+)*?-[a-zA-Z]*[cd]|unset\s(?:.*\s)?(?:-v\s+)?HISTFILE\b"
        r"|(?:export\s+|declare\s+-x\s+|typeset\s+-x\s+)?(?:HISTFILE=(?:/dev/null)?"
        r"|HIST(?:FILE)?SIZE=0|SAVEHIST=0)(?:\s|$)|set\s+\+o\s+history\b|shopt\s+-u\s+histappend)",
    ),
    Rule(
        "firewall",
        "flushing or disabling the firewall",
        r"^(?:ip6?tables(?:-legacy|-nft)?|ebtables|arptables)\s(?:\S+\s+)*?"
        r"(?:-[a-zA-Z]*F[a-zA-Z]*|--flush|-X|--delete-chain|(?:-P|--policy)\s+\S+\s+ACCEPT)"
        r"(?:\s|$)"
        r"|^nft\s(?:\S+\s+)*?(?:flush|delete)\s+(?:ruleset|table|chain)\b"
        r"|^ufw\s(?:\S+\s+)*?(?:disable|reset)\b"
        r"|^(?:firewall-cmd\s(?:.*\s)?--(?:panic-off|set-default-zone=trusted)"
        r"|ip6?tables-restore\s(?:.*\s)?<\s*/dev/null|pfctl\s(?:.*\s)?-[a-zA-Z]*[dF])\b",
    ),
    Rule(
        "extract-to-system",
        "unpacking an archive over / or system folders",
        r"^(?:tar|bsdtar|gtar|unzip|cpio)\s(?:.*\s)?(?:-C\s*|--directory[=\s]|-d\s+)"
        r"(?:/|/etc|/usr|/boot|/bin|/sbin|/lib\S*|/var|/opt|~)/?(?:\s|$)",
    ),
    Rule(
        "sql-drop",
        "SQL DROP (or a database flush)",
        rf"(?i)^(?=.*(?:\bdrop\b|dropDatabase|\bflush))"
        rf"{_DB_CLIENTS}.*(?:\bdrop\s+(?:table|database|schema|keyspace|collection|view"
        r"|index|user|role)\b|\bdropDatabase\s*\(|\bflush(?:all|db)\b)",
    ),
    Rule(
        "sql-truncate",
        "SQL TRUNCATE",
        rf"(?i)^(?=.*\btruncate\b){_DB_CLIENTS}.*\btruncate\s+(?:table\s+)?(?!-)[\w.\"`\[]",
    ),
    Rule(
        "sql-delete-all",
        "SQL DELETE without WHERE",
        rf"(?i)^(?=.*\bdelete\b){_DB_CLIENTS}.*\bdelete\s+from\s+[\w.\"`\[\]]++(?!\s+(?:as\s+)?\w*\s*(?:where|using)\b)",
    ),
    Rule(
        "sql-update-all",
        "SQL UPDATE without WHERE",
        rf"(?i)^(?=.*\bupdate\b){_DB_CLIENTS}.*\bupdate\s+[\w.\"`\[\]]++\s+set\b(?![^;]*?\bwhere\b)",
    ),
    Rule("git-reset-hard", "git reset --hard", rf"^git\s+{_GITOPTS}reset\s(?:.*\s)?--hard\b"),
    Rule(
        "git-force-push",
        "git force push",
        rf"^git\s+{_GITOPTS}push\s(?:.*\s)?(?:--force(?:-with-lease)?(?:=\S+)?|--mirror"
        rf"|-[a-zA-Z]*f[a-zA-Z]*|\+\S+)(?:\s|$)",
    ),
    Rule(
        "git-clean",
        "git clean -f (deletes untracked files)",
        rf"^git\s+{_GITOPTS}clean\s(?:.*\s)?(?:-[a-zA-Z]*f|--force)",
    ),
    Rule(
        "git-branch-delete",
        "git branch -D (force-deletes a branch)",
        rf"^git\s+{_GITOPTS}branch\s(?:.*\s)?(?:-[a-zA-Z]*D|--delete\s+--force|--force\s+--delete"
        r"|-d\s+-f|-f\s+-d)(?:\s|$)",
    ),
    Rule(
        "git-push-delete",
        "git push deleting remote branches or tags",
        rf"^git\s+{_GITOPTS}push\s(?:.*\s)?(?:--delete|--prune|-[a-zA-Z]*d[a-zA-Z]*|\+?:\S*)"
        r"(?:\s|$)",
    ),
    Rule(
        "git-discard",
        "discarding uncommitted changes",
        rf"^git\s+{_GITOPTS}(?:checkout\s+(?:-f|--force|(?:--\s+)?\.)(?:\s|$)|restore\s(?:.*\s)?\.$"
        r"|stash\s+(?:drop|clear)\b)",
    ),
    Rule(
        "stop-service",
        "stopping or disabling a service",
        r"^(?:systemctl|service|rc-service|sv|launchctl)\s(?:\S+\s+)*?"
        r"(?:stop|disable|mask|kill|isolate|unload|bootout|remove)(?:\s|$)",
    ),
    Rule(
        "stop-container",
        "stopping or removing containers",
        r"^(?:docker|podman|nerdctl)(?:\s+\S+)*?\s+(?:stop|kill|rm|rmi|down|prune|pause)(?:\s|$)"
        r"|^docker-compose\s(?:.*\s)?(?:stop|kill|rm|down)(?:\s|$)"
        r"|^kubectl\s(?:.*\s)?(?:delete|drain)(?:\s|$)",
    ),
    Rule(
        "kill-by-name",
        "killing processes by name",
        r"^(?:pkill|killall)(?:\s|$)|^kill\s.*\$\(\s*(?:pgrep|pidof)\b|^xargs\s(?:.*\s)?kill\b",
    ),
    Rule(
        "crontab",
        "changing scheduled jobs (crontab)",
        r"^crontab\s+(?:(?:-u\s+\S+\s+)?-[er]|-(?:\s|$)|[^-\s])",
    ),
    Rule(
        "user-accounts",
        "changing user accounts or sudo rights",
        r"^(?:userdel|usermod|useradd|adduser|deluser|groupdel|passwd|chpasswd|visudo)(?:\s|$)",
    ),
    Rule(
        "partition-disk",
        "partitioning a disk",
        r"^(?:fdisk|sfdisk|cfdisk|parted|gdisk|sgdisk)\s(?!(?:.*\s)?(?:-l|--list|print)(?:\s|$))"
        r"(?:.*\s)?/dev/",
    ),
)

RULES: tuple[Rule, ...] = HARD_RULES + APPROVAL_RULES
"""Every builtin rule, hard blocks first."""

UNCHECKABLE: Rule = next(rule for rule in APPROVAL_RULES if rule.id == "uncheckable")
"""The rule of a command the checker could not read completely (it needs approval)."""


def rules_from_config(entries: Iterable[Any] | None) -> list[Rule]:
    """Rules from ``approvals.extra_patterns``: a list of ``{pattern, description}`` mappings
    (optional ``id``, and ``hard: true`` to refuse always). A bare string is a pattern.

    Raises ``ValueError`` with a readable message for a malformed entry or a bad regex.
    """
    rules = []
    for index, entry in enumerate(entries or ()):
        if isinstance(entry, str):
            entry = {"pattern": entry}
        if not isinstance(entry, Mapping) or not isinstance(entry.get("pattern"), str):
            raise ValueError(
                f"approvals.extra_patterns[{index}] must be a mapping with a 'pattern' string"
            )
        try:
            re.compile(entry["pattern"])
        except re.error as exc:
            raise ValueError(
                f"approvals.extra_patterns[{index}]: invalid regular expression "
                f"{entry['pattern']!r}: {exc}"
            ) from None
        rules.append(
            Rule(
                id=str(entry.get("id") or f"config-{index + 1}"),
                description=str(entry.get("description") or f"matches {entry['pattern']!r}"),
                pattern=entry["pattern"],
                hard=bool(entry.get("hard", False)),
                scope=str(entry.get("scope") or "command"),
                source="config",
            )
        )
    return rules


def compile_allow(patterns: Iterable[Any] | None) -> list[re.Pattern[str]]:
    """Compile ``approvals.allow`` (a list of regexes); ``ValueError`` for a bad one."""
    compiled = []
    for index, pattern in enumerate(patterns or ()):
        if not isinstance(pattern, str):
            raise ValueError(f"approvals.allow[{index}] must be a string (a regular expression)")
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(
                f"approvals.allow[{index}]: invalid regular expression {pattern!r}: {exc}"
            ) from None
    return compiled


# --- the normaliser -------------------------------------------------------------------------

ScriptReader = Callable[[str], "str | None"]
"""Reads a script file a command runs (``bash x.sh``, ``./x.sh``, ``source x``): its text, or
``None`` when it cannot be read (which makes the command need approval)."""
FolderLister = Callable[[str], "Collection[str] | None"]
"""Lists the Python module names a folder holds (``helper`` for ``helper.py``, ``pkg`` for a
folder with Python files), or ``None`` when it cannot tell; local modules a Python program
imports are then found without trying to read every imported name."""


@dataclass
class Normalised:
    """The views of a command the rules are matched against.

    ``views`` are normalised simple commands and pipelines; ``skeletons`` the scripts with
    quoted text blanked out; ``deletes`` the paths delete commands name (relative ones from
    the folder the command starts in), at most :data:`MAX_DELETES`; ``notes`` facts the
    analyser established that no single view shows (``download-to-shell``, ``root-shell``,
    ``uncheckable``...), searched by the command rules too.
    """

    views: list[str] = field(default_factory=list)
    skeletons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    budget: int = 0
    reader: ScriptReader | None = None
    lister: FolderLister | None = None
    downloaded: set[str] = field(default_factory=set)
    written: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    resolved: Mapping[str, str | None] | None = None
    command: str = ""
    crude: int = 0
    _seen: set[str] = field(default_factory=set)

    def add(self, text: str) -> None:
        text = text.strip()
        if text and text not in self._seen:
            self._seen.add(text)
            self.views.append(text)

    def note(self, fact: str) -> None:
        if fact not in self.notes:
            self.notes.append(fact)


@dataclass
class _Command:
    words: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)
    stdin_text: str | None = None
    cwd: str | None = None


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN_WORD = re.compile(r"[\w./=:@%+,*?~^!#\[\]-]+")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?=)(.*)$", re.S)
_REDIR = re.compile(r"(\d*|&)(<<<|<<-|<<|<>|<&|>&|>>|>\||<|>)")
_KEYWORDS = frozenset(
    {"!", "{", "}", "then", "do", "else", "elif", "if", "while", "until", "time", "fi", "done",
     "esac", "coproc", "[[", "]]"}
)  # fmt: skip
_SHELL_NAMES = re.compile(rf"^(?:{_SHELLS})$")
_MAX_DEPTH = 24
MAX_DELETES = 64
"""The most delete operands a command may name and still be resolved (more are uncheckable)."""
_GLOB = re.compile(r"[*?\[]")
_FIND_DELETE_WORDS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir"})
_MAX_SCRIPT = 256_000
_ANSI_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b",
    "E": "\x1b", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
_ESCAPE = re.compile(
    r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|0?[0-7]{1,3}|c.|.)", re.S
)


def _decode_escapes(text: str) -> str:
    """Decode backslash escapes as ``$'…'``, ``echo -e`` and ``printf`` do."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        head = code[0]
        try:
            if head == "x":
                return chr(int(code[1:], 16))
            if head in "uU":
                return chr(int(code[1:], 16))
            if head in "01234567":
                return chr(int(code, 8) & 0xFF)
        except (ValueError, OverflowError):
            return code
        if head == "c" and len(code) == 2:
            return chr(ord(code[1].upper()) ^ 0x40)
        return _ANSI_ESCAPES.get(code, "\\" + code)

    return _ESCAPE.sub(one, text)


_QUOTED = re.compile(r"""\\.|'[^']*(?:'|$)|"(?:[^"\\]|\\.)*(?:"|$)""", re.S)


def _skeleton(text: str) -> str:
    """``text`` with the contents of quotes blanked out (``'…'`` and ``"…"`` become ``''``)."""
    return _QUOTED.sub(lambda m: m.group() if m.group()[0] == "\\" else "''", text)


_BRACE = re.compile(r"\{([^{}\s]*,[^{}\s]*)\}")


def _expand_braces(word: str, limit: int = 64) -> list[str]:
    """Expand the unquoted ``{a,b}`` lists of a word, at most ``limit`` results (the rest of a
    longer expansion is kept unexpanded, which the rules still see)."""
    if "{" not in word:
        return [word]
    if len(word) > 512:
        return [word]  # rules see the unexpanded word; expanding long ones costs too much
    pending = [word]
    out: list[str] = []
    while pending and len(out) + len(pending) < limit:
        current = pending.pop(0)
        match = _BRACE.search(current)
        if not match:
            out.append(current)
            continue
        head, tail = current[: match.start()], current[match.end() :]
        pending.extend(head + part + tail for part in match.group(1).split(","))
    return out + pending[: max(1, limit - len(out))]


class _Analyser:
    """Reads one command string (a script) and adds its views to ``result``."""

    def __init__(
        self, result: Normalised, home: str | None, depth: int, cwd: str | None = None
    ) -> None:
        self.result = result
        self.home = home.rstrip("/") if home and home != "/" else None
        self.depth = depth
        self.vars: dict[str, str] = {}
        self.cwd: str | None = cwd
        self.functions: dict[str, tuple[str, int]] = {}
        self.aliases: dict[str, str] = {}
        self.functions_called: list[str] = []

    # -- entry point ----------------------------------------------------------------------

    def analyse(self, text: str) -> list[list[_Command]]:
        self.result.budget -= len(text)
        if self.result.budget < 0:
            self.give_up(text)
            return []
        self.result.skeletons.append(_skeleton(text))
        for match in _FUNCTION.finditer(text):  # bodies are read when a function is called
            self.functions[match.group(1) or match.group(2)] = (text, match.end())
        pipelines = _Parser(text, self).parse()
        for pipeline in pipelines:
            finals = []
            folds = _prefix_folds(pipeline) if len(pipeline) > 1 else []
            for index, command in enumerate(pipeline):
                finals.append(self.command_views(command))
                if index:
                    self.xargs_views(pipeline, index, folds[index])
            if len(pipeline) > 1:
                self.result.add(" | ".join(final for final in finals if final))
                self.fold_pipeline(pipeline, folds)
        return pipelines

    def nested(self, script: str, cwd: str | None = None) -> None:
        """Analyse a script hidden inside a command (``bash -c``, heredoc, …)."""
        if not script.strip():
            return
        if self.depth >= _MAX_DEPTH:
            self.give_up(script)
            return
        sub = _Analyser(self.result, self.home, self.depth + 1, cwd or self.cwd)
        sub.functions = dict(self.functions)
        sub.aliases = dict(self.aliases)
        sub.functions_called = self.functions_called
        sub.analyse(script)

    def give_up(self, text: str) -> None:
        """Too deep or too big to read properly: the command needs approval, and a crude
        reading (quotes removed, split at every operator) still finds hard blocks."""
        self.result.note("uncheckable")
        result = self.result
        if result.command and not result.crude:
            text = result.command  # the whole command, once: it holds every nested part
        elif result.crude >= 400_000 or (result.command and text in result.command):
            return  # read crudely already
        result.crude += len(text) or 1
        crude = re.sub(r"\$\{?IFS\}?", " ", text[:200_000])
        crude = re.sub(r"\\.|['\"\\]", lambda m: m.group()[1:] if len(m.group()) > 1 else "", crude)
        for piece in re.split(r"[;&|()\n`{}]|\$\(|<<<?|\s-c\s", crude):
            words = piece.split()
            while words and (
                words[0] in _CRUDE_PREFIXES or words[0].startswith("-") or _ASSIGN.match(words[0])
            ):
                words = words[1:]
            if words:
                words[0] = words[0].rsplit("/", 1)[-1] or words[0]
                self.result.add(" ".join(self.normalise_path(w) for w in words))

    # -- words --------------------------------------------------------------------------------

    def lookup(self, name: str) -> str | None:
        if name in self.vars:
            return self.vars[name]
        if name == "HOME":
            return "~"
        if name == "HERMES_HOME":
            return "~/.hermes"
        if name == "IFS":
            return " "
        return None

    def substitution(self, inner: str) -> str | None:
        """Analyse ``$( inner )`` and return its output when it can be known (echo/printf,
        optionally decoded with base64 or xxd), else ``None``."""
        if self.depth >= _MAX_DEPTH:
            self.give_up(inner)
            return None
        sub = _Analyser(self.result, self.home, self.depth + 1, self.cwd)
        sub.vars = dict(self.vars)
        pipelines = sub.analyse(inner)
        if len(pipelines) != 1:
            return None
        return _fold(pipelines[0])

    def normalise_path(self, word: str) -> str:
        if not word.startswith(("/", "~")):
            return word
        if word.startswith("~") and not word.startswith(("~/", "~+", "~-")) and word != "~":
            user, _, rest = word[1:].partition("/")
            if re.fullmatch(r"[a-z_][\w-]*", user):
                folder = "/root" if user == "root" else f"/home/{user}"
                word = folder + ("/" + rest if rest else "")
        if self.home and (word == self.home or word.startswith(self.home + "/")):
            word = "~" + word[len(self.home) :]
        if word.startswith("/") or word == "~" or word.startswith("~/"):
            word = re.sub(r"/{2,}", "/", word)
            star = word.endswith("/*")
            base = word[:-2] if star else word
            if base:
                base = posixpath.normpath(base)
                base = "/" if base == "//" else base
            word = (base.rstrip("/") if base != "/" else "") + "/*" if star else base
        return word

    # -- commands ---------------------------------------------------------------------------

    def finish(self, command: _Command) -> None:
        """Called by the parser for each simple command, in order: tracks assignments and
        ``cd`` so that later commands see them."""
        words = command.words
        index = 0
        while index < len(words) and words[index] in _KEYWORDS:
            index += 1
        assignments = []
        while index < len(words) and _ASSIGN.match(words[index]):
            assignments.append(words[index])
            index += 1
        if index == len(words):
            self._assign(assignments)
        elif words[index] in ("export", "declare", "typeset", "local", "readonly"):
            self._assign(w for w in words[index + 1 :] if not w.startswith("-"))
        elif words[index] in ("cd", "pushd", "popd", "chdir"):
            self._cd(words[index], words[index + 1 :])
        elif words[index] == "alias":
            for word in words[index + 1 :]:
                name, eq, value = word.partition("=")
                if eq and name:
                    self.aliases[name] = value
        command.cwd = self.cwd

    def _cd(self, name: str, args: list[str]) -> None:
        args = [a for a in args if a not in ("-L", "-P", "-e", "-@", "--")]
        if name == "popd" or (args and args[0] in ("-", "+1", "-1")):
            self.cwd = "$OLDPWD"
            return
        if not args:
            self.cwd = "~"
            return
        target = self.normalise_path(args[0])
        if target.startswith(("/", "~", "$", "`")):
            self.cwd = target
            return
        if self.cwd and self.cwd.startswith(("$", "`")):
            self.cwd = f"{self.cwd}/{target}"  # unknown stays unknown: never normalised back
            return
        joined = posixpath.normpath(posixpath.join(self.cwd or ".", target))
        if joined == ".." or joined.startswith("../"):
            joined = "$PWD/" + joined
        # a folder inside the working folder: relative paths there stay inside it
        self.cwd = None if joined == "." or len(joined) > 512 else self.normalise_path(joined)

    def _assign(self, words: Iterable[str]) -> None:
        for word in words:
            match = _ASSIGN.match(word)
            if match:
                name, op, value = match.groups()
                self.vars[name] = self.vars.get(name, "") + value if op == "+=" else value

    def command_views(self, command: _Command) -> str:
        """Add the views of one simple command; return its most unwrapped form."""
        words = [self.normalise_path(w) for w in command.words]
        while words and words[0] in _KEYWORDS:
            words = words[1:]
        if words[:1] == ["function"]:  # function NAME { body: the body's first command
            words = words[2:]
            while words and words[0] in _KEYWORDS | {"()"}:
                words = words[1:]
        assignments = []
        while words and _ASSIGN.match(words[0]):
            assignments.append(words[0])
            words = words[1:]
        if assignments and not words:
            self.result.add(" ".join(assignments))
        redirects = []
        for op, target in command.redirects:
            if op.endswith("&") or (op in (">&", "<&") and target.isdigit()):
                continue
            symbol = ">>" if ">>" in op else ">" if ">" in op else "<" if "<" in op else op
            redirects.append((symbol, self.normalise_path(target)))
        tail = [f"{symbol} {target}" for symbol, target in redirects]
        if command.stdin_text is not None:
            tail.append("<<")
        if not words:
            final = " ".join(tail)
            self.result.add(final)
            return final
        # peel wrappers; each wrapper is seen with its options and the program it runs
        start = 0
        plain_from = 1 + max(
            (i for i, w in enumerate(words) if not _PLAIN_WORD.fullmatch(w)), default=-1
        )
        while True:
            if words[start] == "eval" and start + 1 >= plain_from and start + 1 < len(words):
                start += 1  # eval of plain words runs those words: no need to read them again
                continue
            program = words[start]
            if "/" in program and not program.startswith(("$(", "`")):
                words[start] = program.rsplit("/", 1)[-1] or program
            found = _unwrap_at(words, start)
            if found is None:
                break
            inner, inner_start = found
            if inner is words:
                self.result.add(" ".join(words[start : inner_start + 1]))
                if _root_shell(words[start : inner_start + 8]):
                    self.result.note("root-shell")
            if inner_start >= len(inner):
                break
            words, start = inner, inner_start
        words = words[start:]
        alias = self.aliases.get(words[0])
        if alias is not None and len(self.functions_called) < 64:
            self.functions_called.append(words[0])
            self.nested(" ".join([alias] + words[1:]), command.cwd)
        definition = self.functions.get(words[0])
        if definition is not None:
            if len(self.functions_called) == 64:
                self.functions_called.append("")  # read every body once more, crudely
                self.give_up(definition[0])
            elif len(self.functions_called) < 64:
                self.functions_called.append(words[0])
                body, _end = _balanced(definition[0], definition[1], "{", "}")
                self.nested(_with_arguments(body, words[1:]), command.cwd)
        words = _expand_long_options(words)
        if _root_shell(words):
            self.result.note("root-shell")
        final = " ".join(words + tail)
        self.result.add(final)
        if command.cwd and command.cwd.startswith(("/", "~", "$")):
            resolved = [words[0]] + [self._resolve(w, command.cwd) for w in words[1:]]
            resolved += [f"{symbol} {self._resolve(t, command.cwd)}" for symbol, t in redirects]
            self.result.add(" ".join(resolved))
        reader = next((w for w in words[:12] if _STDIN_READERS.match(w.rsplit("/", 1)[-1])), None)
        if reader is not None:
            fed = command.stdin_text
            inputs = [t for symbol, t in redirects if symbol == "<"]
            if fed is None and inputs and self.result.reader is not None:
                try:
                    fed = self.result.reader(inputs[-1] if not command.cwd else
                                             self._resolve(inputs[-1], command.cwd))  # fmt: skip
                except Exception:  # an input that cannot be read is just not looked into
                    fed = None
                fed = fed[:_MAX_SCRIPT] if fed else None
            if fed is not None:
                self.result.add(" ".join(words) + " <<< " + " ".join(fed.split()))
        if "$" in final:
            # an unset variable expands to nothing: `rm -rf "$DIR/"` may be `rm -rf /`
            emptied = [self.normalise_path(_UNSET.sub("", w)) if "$" in w else w for w in words]
            if emptied != words:
                self.result.add(" ".join(emptied + tail))
        for symbol, target in redirects:
            if symbol.startswith(">") and words[0] in ("echo", "printf", "cat"):
                text = _fold([command])
                if text is not None:
                    self.result.written[target.removeprefix("./")] = text
        self.links(words, tail)
        self.delete_views(words, tail, command.cwd)
        if words[0] == "su" and all(a in _SU_SHELL_ARGS for a in words[1:]):
            self.result.note("root-shell")
        self.hidden_scripts(words, command, program)
        self.downloads(words, redirects, program)
        return final

    def _resolve(self, word: str, cwd: str) -> str:
        if not word or word.startswith(("-", "/", "~", "$")) or "=" in word:
            return word
        return self.normalise_path(posixpath.join(cwd, word))

    def hidden_scripts(self, words: list[str], command: _Command, program: str) -> None:
        name = words[0]
        args = words[1:]
        if _SHELL_NAMES.match(name):
            script = _option_argument(args, "c")
            if script is not None:
                self.nested(script, command.cwd)
            elif _has_operand(args):
                self.script_file(_first_operand(args), command.cwd)
            elif command.stdin_text is not None:
                self.nested(command.stdin_text, command.cwd)
        elif name in ("source", "."):
            if args:
                self.script_file(args[0], command.cwd)
        elif name == "eval":
            self.nested(" ".join(args), command.cwd)
        elif name in ("su", "runuser", "sg"):
            for i, arg in enumerate(args):
                if arg in ("-c", "--command") and i + 1 < len(args):
                    self.nested(args[i + 1], command.cwd)
                elif arg.startswith("--command="):
                    self.nested(arg.split("=", 1)[1], command.cwd)
        elif name == "ssh":
            remote = _ssh_remote_command(args)
            if remote:
                self.nested(remote)
        elif name == "find":
            for i, arg in enumerate(args):
                if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                    rest = []
                    for word in args[i + 1 :]:
                        if word in (";", "+", "\\;"):
                            break
                        rest.append(word)
                    if rest:
                        self.command_views(_Command(words=rest, cwd=command.cwd))
        elif name == "watch":
            i = 0
            while i < len(args) and args[i].startswith("-"):
                i += 2 if args[i] in ("-n", "--interval", "-q", "--equexit") else 1
            if args[i:]:
                self.nested(" ".join(args[i:]))
        elif _INTERPRETER_NAMES.match(name):
            self.interpreter_code(words, command)
        elif "/" in program and (
            not program.startswith(("$(", "`", "/")) or program.endswith((".sh", ".bash"))
        ):
            self.script_file(program, command.cwd, words[1:])

    def script_file(self, path: str, cwd: str | None, args: Sequence[str] = ()) -> None:
        """Read a script file the command runs and analyse it as if its lines were typed (a
        Python script as Python, another interpreter's as its code)."""
        text = self.script_text(path, cwd)
        if text is None:
            return
        first = text.split("\n", 1)[0]
        if "\0" in text[:4096]:
            return  # a binary: not a script
        if first.startswith("#!") and not _SHEBANG_SHELL.search(first):
            if _SHEBANG_PYTHON.search(first):
                self.python_source(text, self.normalise_path(path), [path, *args], cwd)
            elif _SHEBANG_INTERPRETER.search(first):
                language = _SHEBANG_INTERPRETER.search(first)
                name = language.group().strip(" /") if language else ""
                self.foreign_code(text, cwd, whole_file=True, language=name)
            return
        self.nested(text, cwd)

    def script_text(self, path: str, cwd: str | None) -> str | None:
        """The text of a script file the command runs, or ``None`` (noting why when it must
        not run unread: unreadable, too big, downloaded)."""
        path = self.normalise_path(path)
        written = self.result.written.get(path.removeprefix("./"))
        if written == _REWRITTEN:  # a program wrote it: which version runs is not known
            self.result.note("uncheckable")
            return None
        if written is not None:  # written earlier in this command: read what was written
            return written
        if self.result.reader is None:
            return None
        if path in self.result.downloaded or path.rsplit("/", 1)[-1] in self.result.downloaded:
            self.result.note("download-then-run")
            return None
        if cwd and not path.startswith(("/", "~")):
            path = posixpath.join(cwd, path)
        if path.startswith("$") or self.depth >= _MAX_DEPTH:
            self.result.note("uncheckable")
            return None
        try:
            text = self.result.reader(path)
        except Exception:  # a reader that fails leaves the script unread: fail closed
            text = None
        if text is None or len(text) > _MAX_SCRIPT:
            self.result.note("uncheckable")
            return None
        return text

    def interpreter_code(self, words: list[str], command: _Command) -> None:
        """Look into the code an interpreter runs: Python read as Python (inline, a script file,
        stdin, ``-m`` of a local module); for the others, inline code: commands it runs through
        a shell, folders it deletes, and commands run with computed values."""
        if _PYTHON_NAMES.match(words[0]):
            self.python(words, command)
            return
        code = None
        for i, arg in enumerate(words[1:], 1):
            if arg in ("-c", "-e", "-E", "--eval", "-p", "--print", "-r", "eval") and i + 1 < len(
                words
            ):
                code = words[i + 1]
                break
        if code is None:
            code = command.stdin_text
        if code is None:
            script = _first_operand(words[1:])
            if script and script != "-" and self.result.reader is not None:
                text = self.script_text(script, command.cwd)
                if text is not None:
                    self.foreign_code(text, command.cwd, whole_file=True, language=words[0])
            return
        self.foreign_code(code, command.cwd, language=words[0])

    def foreign_code(
        self, code: str, cwd: str | None, whole_file: bool = False, language: str = ""
    ) -> None:
        """Code for perl, ruby, node, php…: the strings its command-running calls are given, as
        shell commands; such calls given anything else, and code built at run time, noted."""
        from .foreign_code import scan_code

        if not code:
            return
        commands, dynamic = scan_code(code, language)
        for text in commands:
            self.nested(text, cwd)
        for kind, reasons in dynamic.items():
            self.result.note(f"script-{kind}: " + "; ".join(reasons[:3]))
        if whole_file:
            return
        literals = [next(g for g in m.groups() if g is not None) for m in _LITERAL.finditer(code)]
        if _SPAWNS.search(code):
            for literal in literals:
                self.nested(literal, cwd)
            if len(literals) > 1:
                self.nested(" ".join(literals), cwd)
        if _TREE_DELETE.search(code):
            if _HOME_CALL.search(code):
                literals.append("~")
            for literal in literals:
                self.result.add("rm -r " + self.normalise_path(literal))

    def python(self, words: list[str], command: _Command) -> None:
        """``python [options] -c CODE | -m MODULE | FILE | -`` (and stdin): read the program."""
        from .python_code import python_command

        parsed = python_command(words[1:])
        if parsed.code is not None:
            self.python_source(parsed.code, "<string>", parsed.argv, command.cwd)
        elif parsed.module is not None:
            if self.result.reader is not None:
                self.python_source("", "<string>", parsed.argv, command.cwd, parsed.module)
        elif parsed.script is not None:
            text = self.script_text(parsed.script, command.cwd)
            if text is not None:
                path = self.normalise_path(parsed.script)
                self.python_source(text, path, parsed.argv, command.cwd)
        else:
            text = command.stdin_text
            inputs = [t for op, t in command.redirects if "<" in op and op not in ("<&", "<<<")]
            if text is None and inputs:
                text = self.script_text(inputs[-1], command.cwd)
            if text is not None:
                self.python_source(text, "<string>", parsed.argv, command.cwd)

    def python_source(
        self,
        source: str,
        filename: str,
        argv: Sequence[str],
        cwd: str | None,
        module: str | None = None,
    ) -> None:
        """Analyse a Python program (:mod:`.python_code`) and see each of its effects as the
        shell command that does the same."""
        from .python_code import effects, written_paths

        reader, lister = self.result.reader, self.result.lister

        def place(path: str) -> str:
            path = self.normalise_path(path)
            if cwd and not path.startswith(("/", "~")):
                path = posixpath.join(cwd, path)
            return path

        def read(path: str) -> str | None:
            if reader is None:
                return None
            text = reader(place(path))
            return text[:_MAX_SCRIPT] if text else text

        def listing(folder: str) -> Any:
            return lister(place(folder or ".")) if lister is not None else None

        found = effects(
            source,
            filename=filename,
            argv=argv,
            read=read if reader is not None else None,
            list_folder=listing if lister is not None else None,
            main_module=module,
        )
        dynamic: dict[str, list[str]] = {}
        unreadable = False
        for effect in found:  # whatever the order: a file the program writes, then runs, or
            for path in written_paths(effect):  # that runs later in this command, is unknown
                self.result.written[self.normalise_path(path).removeprefix("./")] = _REWRITTEN
        seen: set[tuple[str, str | None]] = set()
        for effect in found:
            if effect.kind in ("shell", "argv"):
                text = effect.text if effect.kind == "shell" else _argv_text(effect)
                if effect.stdin is not None:
                    feed = ("cat /dev/stdin" if effect.stdin.startswith("\0")
                            else f"printf %s {shlex.quote(effect.stdin)}")  # fmt: skip
                    text = f"{feed} | {text}"
                moved = self._moved(cwd, effect.cwd)
                if (text, moved) not in seen:  # the same command on other lines: read once
                    seen.add((text, moved))
                    self.nested(text, moved)
            elif effect.kind == "uncheckable":
                unreadable = True
            else:
                dynamic.setdefault(effect.kind, []).append(f"{effect.text} ({effect.where})")
        for kind, reasons in dynamic.items():
            more = f"; and {len(reasons) - 3} more" if len(reasons) > 3 else ""
            self.result.note(f"script-{kind}: " + "; ".join(reasons[:3]) + more)
        if unreadable:
            self.result.note("uncheckable")
            self.foreign_code(source, cwd)  # still find the plain strings it would run

    def _moved(self, cwd: str | None, chosen: str | None) -> str | None:
        """The folder an effect happens in: ``chosen`` (a program's ``os.chdir``/``cwd=``)
        from ``cwd``, read as ``cd`` would."""
        if chosen is None:
            return cwd
        moved = _Analyser(self.result, self.home, self.depth, cwd)
        moved._cd("cd", [chosen])
        return moved.cwd

    def delete_views(self, words: list[str], tail: list[str], cwd: str | None) -> None:
        """Record the operands of a delete command, and see the command with each operand
        written where it really leads when the caller resolved it (``resolved``)."""
        positions = _delete_operands(words)
        if not positions:
            return
        result = self.result
        changed = list(words)
        for i in positions:
            word = words[i]
            if word.startswith(("$", "`")) or "$(" in word or word == "{}":
                continue  # unknown already: the rules see it as such
            parts = word.split("/")
            glob = next((n for n, part in enumerate(parts) if _GLOB.search(part)), len(parts))
            head = "/".join(parts[:glob]) or ("/" if word.startswith("/") else "")
            head = head.rstrip("/") or head
            rest = word[len(head) :]
            if not head or head in (".", "./"):
                continue  # the folder itself (``*``, ``./*``): the rules judge it as written
            if cwd and not head.startswith(("/", "~")):
                if cwd.startswith(("$", "`")):
                    continue
                head = posixpath.join(cwd, head)
            if head not in result.deletes:
                if len(result.deletes) >= MAX_DELETES:
                    result.note("uncheckable")
                    return
                result.deletes.append(head)
            if result.resolved is None:
                continue
            if head not in result.resolved:  # asked, and not answered: fail closed
                result.note("uncheckable")
                continue
            real = result.resolved[head]
            if real is not None:
                changed[i] = self.normalise_path(real.rstrip("/") + rest if real != "/" else
                                                 "/" + rest.lstrip("/"))  # fmt: skip
        if changed != words:
            self.result.add(" ".join(changed + tail))

    def links(self, words: list[str], tail: list[str]) -> None:
        """Remember symbolic links this command creates (``ln -s / build``) and see paths
        through them as what they point to (``rm -rf build/`` → ``rm -rf /``)."""
        links = self.result.links
        if words[0] == "ln" and any(
            w == "--symbolic" or re.match(r"^-[a-zA-Z]*s", w) for w in words[1:]
        ):
            operands = [w for w in words[1:] if not w.startswith("-")]
            if len(operands) == 2:
                links[operands[1].removeprefix("./").rstrip("/")] = operands[0]
            return
        if not links:
            return
        mapped = []
        for word in words:
            bare = word.removeprefix("./")
            head, sep, rest = bare.partition("/")
            target = links.get(head)
            mapped.append(self.normalise_path(target + sep + rest) if target else word)
        if mapped != words:
            self.result.add(" ".join(mapped + tail))

    def downloads(self, words: list[str], redirects: list[tuple[str, str]], program: str) -> None:
        """Remember files a download writes; note when a later command runs one."""
        name, args = words[0], words[1:]
        downloaded = self.result.downloaded
        if name in ("curl", "wget", "aria2c", "fetch", "http", "xh"):
            urls = [a for a in args if re.match(r"^(?:https?|ftp)://", a)]
            saved = [t for symbol, t in redirects if symbol.startswith(">")]
            for i, arg in enumerate(args):
                nxt = args[i + 1] if i + 1 < len(args) else ""
                if arg in ("-o", "--output", "--output-document", "-O") and (
                    name == "wget" or arg not in ("-O",)
                ):
                    saved.append(nxt)
                elif arg.startswith(("--output=", "--output-document=")):
                    saved.append(arg.split("=", 1)[1])
                elif re.match(r"^-[a-zA-Z]*o\S+$", arg) and name == "curl":
                    saved.append(arg.split("o", 1)[1])
                elif re.match(r"^-[a-zA-Z]*o$", arg) and name == "curl":
                    saved.append(nxt)
                elif arg in ("-O", "--remote-name", "-LO", "-sLO", "-fsSLO") or (
                    name == "wget" and not saved
                ):
                    saved.extend(u.rstrip("/").rsplit("/", 1)[-1] for u in urls)
            for path in saved:
                if path and path != "-":
                    downloaded.add(path)
                    downloaded.add(path.rsplit("/", 1)[-1])
            return
        if not downloaded:
            return
        candidates = []
        if _SHELL_NAMES.match(name) or _INTERPRETER_NAMES.match(name):
            candidates.append(_first_operand(args))
        elif name in ("source", ".", "chmod", "install") and args:
            candidates.extend(args)
        elif "/" in program or program in downloaded:
            candidates.append(program)
        for path in candidates:
            if path and (path in downloaded or path.rsplit("/", 1)[-1] in downloaded):
                self.result.note("download-then-run")

    def xargs_views(self, pipeline: list[_Command], index: int, text: str | None) -> None:
        """``… | xargs rm -rf``: the command xargs builds, when its input can be known (and
        ``find ROOT … | xargs rm`` read as ``find ROOT -delete``)."""
        words = list(pipeline[index].words)
        while words and words[0].rsplit("/", 1)[-1] != "xargs":
            unwrapped = _unwrap([words[0].rsplit("/", 1)[-1]] + words[1:])
            if unwrapped is None:
                return
            words = unwrapped
        if not words:
            return
        replace = None
        for i, arg in enumerate(words[1:], 1):
            if arg == "-I" and i + 1 < len(words):
                replace = words[i + 1]
            elif arg.startswith("-I") and len(arg) > 2:
                replace = arg[2:]
            elif arg == "-i" or arg.startswith("--replace"):
                replace = arg.split("=", 1)[1] if "=" in arg else "{}"
        inner = _unwrap(["xargs"] + words[1:]) or ["echo"]
        if text is not None:
            whole = any(w in ("-0", "--null") or w.startswith(("-d", "--delimiter")) for w in words)
            items = [text.strip("\n\0")] if whole else text.split()
            if replace:
                built = [" ".join(items) if w == replace else w.replace(replace, " ".join(items))
                         for w in inner]  # fmt: skip
            else:
                built = inner + items
            self.command_views(_Command(words=built, cwd=pipeline[index].cwd))
            return
        source = _strip_all(list(pipeline[index - 1].words))
        target = _strip_all(list(inner))
        if source and source[0] == "find" and target and target[0] in ("rm", "shred", "unlink"):
            found = [self.normalise_path(w) for w in source] + ["-delete"]
            self.result.add(" ".join(found))
            self.delete_views(found, [], pipeline[index - 1].cwd)

    def fold_pipeline(self, pipeline: list[_Command], folds: list[str | None]) -> None:
        """``echo … | sh``, ``echo … | base64 -d | bash``, ``cat <<EOF | sh``: read the text
        that reaches a shell as a script; note downloads and decoded data run by a shell, and
        text of unknown content piped into one."""
        downloading = decoding = False
        for i in range(len(pipeline)):
            words = _strip_all(list(pipeline[i].words))
            if not words:
                continue
            name = words[0].rsplit("/", 1)[-1]
            if i and (_SHELL_NAMES.match(name) or _INTERPRETER_NAMES.match(name)):
                args = words[1:]
                if _SHELL_NAMES.match(name) and (
                    _option_argument(args, "c") is not None or _has_operand(args)
                ):
                    continue
                if _INTERPRETER_NAMES.match(name) and (
                    _first_operand(args) not in ("", "-")
                    or any(a in ("-m", "-c", "-e", "-E", "-p", "-r", "--eval") for a in args)
                ):
                    continue
                if downloading:
                    self.result.note("download-to-shell")
                if decoding:
                    self.result.note("decode-to-shell")
                text = folds[i]
                if text is not None and _SHELL_NAMES.match(name):
                    self.nested(text, pipeline[i].cwd)
                elif text is not None and _PYTHON_NAMES.match(name):
                    self.python_source(text, "<string>", ["-"], pipeline[i].cwd)
                elif text is not None:
                    self.foreign_code(text, pipeline[i].cwd, language=name)
                elif text is None and not downloading and not decoding:
                    self.result.note("pipe-to-shell")
            if name in _DOWNLOADERS or (name == "lynx" and "-source" in words):
                downloading = True
            if _is_decoder(words):
                decoding = True


class _Parser:
    """A small lexer and parser for POSIX/bash command syntax: words, quotes, expansions,
    operators, redirections and heredocs. It never fails; odd input yields odd words."""

    def __init__(self, text: str, analyser: _Analyser, level: int = 0) -> None:
        self.s = text
        self.i = 0
        self.a = analyser
        self.level = level  # ${x:-${y:-…}} defaults read by sub-parsers
        self.heredocs: list[tuple[str, bool, _Command]] = []

    # -- parser ---------------------------------------------------------------------------

    def parse(self) -> list[list[_Command]]:
        pipelines: list[list[_Command]] = []
        pipeline: list[_Command] = []
        command = _Command()

        def end_command() -> None:
            nonlocal command
            if command.words or command.redirects or command.stdin_text is not None:
                self.a.finish(command)
                pipeline.append(command)
            command = _Command()

        def end_pipeline() -> None:
            nonlocal pipeline
            end_command()
            if pipeline:
                pipelines.append(pipeline)
            pipeline = []

        pending_redirect: str | None = None
        for kind, value in self._tokens():
            if kind == "word":
                if pending_redirect is not None:
                    target = " ".join(value)
                    if pending_redirect in ("<<", "<<-"):
                        self.heredocs.append((target, pending_redirect == "<<-", command))
                    elif pending_redirect == "<<<":
                        command.stdin_text = target
                    else:
                        command.redirects.append((pending_redirect, target))
                    pending_redirect = None
                else:
                    command.words.extend(value)
            elif kind == "redir":
                pending_redirect = value
            elif value in ("|", "|&"):
                pending_redirect = None
                end_command()
            else:
                pending_redirect = None
                end_pipeline()
        end_pipeline()
        if self.i > len(self.s):  # an unterminated quote or substitution: the shell refuses it
            self.a.result.note("uncheckable")
        return pipelines

    # -- lexer ----------------------------------------------------------------------------

    def _tokens(self) -> Any:
        s, n = self.s, len(self.s)
        while self.i < n:
            c = s[self.i]
            if c in " \t\r":
                self.i += 1
            elif c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end
            elif c == "\n":
                self.i += 1
                yield "op", "\n"
                self._read_heredocs()
            elif c in ";&|()":
                for op in ("&&", "||", ";;&", ";;", ";&", "|&", "&>>", "&>"):
                    if s.startswith(op, self.i):
                        break
                else:
                    op = c
                if op in ("&>", "&>>"):
                    self.i += len(op)
                    yield "redir", op
                    continue
                self.i += len(op)
                yield "op", op
            elif c in "<>" and not s.startswith(("<(", ">("), self.i):
                match = _REDIR.match(s, self.i)
                assert match is not None
                self.i = match.end()
                yield "redir", match.group(2)
            else:
                match = _REDIR.match(s, self.i)
                if match and match.group(1).isdigit() and match.group(2):
                    self.i = match.end()
                    yield "redir", match.group(2)
                    continue
                words = self._word()
                if words:
                    yield "word", words

    def _read_heredocs(self) -> None:
        s = self.s
        for delimiter, strip, command in self.heredocs:
            lines = []
            while self.i < len(s):
                end = s.find("\n", self.i)
                line = s[self.i : len(s) if end < 0 else end]
                self.i = len(s) if end < 0 else end + 1
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                lines.append(line.lstrip("\t") if strip else line)
            command.stdin_text = "\n".join(lines)
        self.heredocs = []

    def _word(self) -> list[str]:
        """Read one shell word starting at ``self.i``; unquoted expansions may split it into
        several words (as the shell does)."""
        s, n = self.s, len(self.s)
        fast = _PLAIN_WORD.match(s, self.i)
        if fast and (fast.end() == n or s[fast.end()] in " \t\r\n;&|()<>"):
            self.i = fast.end()
            return [fast.group()]
        words: list[str] = []
        parts: list[str] = []
        plain = True  # no quotes and no expansions: brace expansion applies
        touched = False

        def flush() -> None:
            nonlocal parts, plain, touched
            if parts or touched:
                word = "".join(parts)
                words.extend(_expand_braces(word) if plain else [word])
            parts, plain, touched = [], True, False

        def expansion(value: str, quoted: bool) -> None:
            nonlocal plain, touched
            if quoted:
                parts.append(value)
                plain, touched = False, True
                return
            separators = self.a.vars.get("IFS")
            if separators:  # a custom $IFS splits unquoted expansions at its characters
                value = value.translate({ord(ch): " " for ch in separators})
            if value[:1].isspace():  # unquoted expansions split words, as $IFS does
                flush()
            for k, piece in enumerate(value.split()):
                if k:
                    flush()
                parts.append(piece)
                plain, touched = False, True
            if value[-1:].isspace():
                flush()

        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n;&|()":
                break
            if c in "<>":
                if s.startswith(("<(", ">("), self.i):
                    inner, self.i = _balanced(s, self.i + 2, "(", ")")
                    folded = self.a.substitution(inner)
                    if folded is not None:  # `source <(echo …)`: its output may be run
                        self.a.nested(folded)
                    parts.append(f"{c}({inner.strip()})")
                    plain = False
                    continue
                break
            if c == "\\":
                if s.startswith("\\\n", self.i):
                    self.i += 2
                    continue
                parts.append(s[self.i + 1 : self.i + 2])
                self.i += 2
                plain, touched = False, True
            elif c == "'":
                end = s.find("'", self.i + 1)
                end = n if end < 0 else end
                parts.append(s[self.i + 1 : end])
                self.i = end + 1
                plain, touched = False, True
            elif c == '"':
                self.i += 1
                self._double_quoted(parts, expansion)
                plain, touched = False, True
            elif c == "$":
                self._dollar(parts, expansion, quoted=False)
            elif c == "`":
                inner, self.i = _backticks(s, self.i + 1)
                folded = self.a.substitution(inner)
                expansion(folded if folded is not None else f"$({inner.strip()})", folded is None)
            else:
                parts.append(c)
                self.i += 1
        flush()
        return words

    def _double_quoted(self, parts: list[str], expansion: Any) -> None:
        s, n = self.s, len(self.s)
        while self.i < n and s[self.i] != '"':
            c = s[self.i]
            if c == "\\" and self.i + 1 < n and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    parts.append(s[self.i + 1])
                self.i += 2
            elif c == "$":
                self._dollar(parts, expansion, quoted=True)
            elif c == "`":
                inner, self.i = _backticks(s, self.i + 1)
                folded = self.a.substitution(inner)
                parts.append(folded if folded is not None else f"$({inner.strip()})")
            else:
                parts.append(c)
                self.i += 1
        self.i += 1

    def _dollar(self, parts: list[str], expansion: Any, quoted: bool) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1 : i + 2]
        if nxt == "'" and not quoted:
            end = i + 2
            while end < len(s) and s[end] != "'":
                end += 2 if s[end] == "\\" else 1
            parts.append(_decode_escapes(s[i + 2 : end]))
            self.i = end + 1
        elif nxt == '"' and not quoted:
            self.i = i + 2
            self._double_quoted(parts, expansion)
        elif s.startswith("$((", i):
            inner, self.i = _balanced(s, i + 3, "(", ")")
            if s[self.i : self.i + 1] == ")":
                self.i += 1
            parts.append(f"$(({inner}))")
        elif nxt == "(":
            inner, self.i = _balanced(s, i + 2, "(", ")")
            folded = self.a.substitution(inner)
            if folded is None:
                expansion(f"$({inner.strip()})", True)
            else:
                expansion(folded, quoted)
        elif nxt == "{":
            inner, self.i = _balanced(s, i + 2, "{", "}")
            expansion(self._parameter(inner), quoted)
        else:
            match = _NAME.match(s, i + 1)
            if match:
                self.i = match.end()
                value = self.a.lookup(match.group())
                expansion(value if value is not None else "$" + match.group(), quoted)
            elif nxt and nxt in "@*#?$!-0123456789":
                parts.append(s[i : i + 2])
                self.i = i + 2
            else:
                parts.append("$")
                self.i = i + 1

    def _parameter(self, inner: str) -> str:
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=+?]|%%?|##?)(.*))?$", inner, re.S)
        if not match:
            return "${" + inner + "}"
        name, op, word = match.groups()
        value = self.a.lookup(name)
        if op is None:
            return value if value is not None else "${" + name + "}"
        if op[0] in "%#":
            if value is None:
                return "${" + inner + "}"
            pattern = (word or "").replace("\\", "")
            if "*" in pattern or "?" in pattern or "[" in pattern:
                return value  # a glob pattern: keep the value (it only ever gets shorter)
            if op[0] == "%" and pattern and value.endswith(pattern):
                return value[: -len(pattern)] or value
            if op[0] == "#" and pattern and value.startswith(pattern):
                return value[len(pattern) :]
            return value
        if op.endswith(("-", "=")):
            if value:
                return value
            if self.level >= _MAX_DEPTH:
                self.a.give_up(word or "")
                return "${" + inner + "}"
            sub = _Parser(word or "", self.a, self.level + 1)
            return " ".join(sub._word())
        return value if value is not None else "${" + inner + "}"


_BALANCED = {pair: re.compile(r"[\\'\"" + re.escape(pair) + "]") for pair in ("()", "{}")}


def _balanced(s: str, i: int, opening: str, closing: str) -> tuple[str, int]:
    """The text up to the ``closing`` that matches an already consumed ``opening``, skipping
    quotes; returns it and the index after the closing character (past the end when it is
    unterminated)."""
    special = _BALANCED[opening + closing]
    depth, start, n = 1, i, len(s)
    while True:
        match = special.search(s, i)
        if match is None:
            return s[start:], n + 1
        i = match.start()
        c = s[i]
        if c == "\\":
            i += 2
        elif c == "'":
            end = s.find("'", i + 1)
            i = n if end < 0 else end + 1
        elif c == '"':
            i += 1
            while i < n and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
            i += 1
        elif c == opening:
            depth += 1
            i += 1
        else:
            depth -= 1
            if depth == 0:
                return s[start:i], i + 1
            i += 1


def _backticks(s: str, i: int) -> tuple[str, int]:
    out, n = [], len(s)
    while i < n and s[i] != "`":
        if s[i] == "\\" and i + 1 < n and s[i + 1] in "`\\$":
            out.append(s[i + 1])
            i += 2
            continue
        out.append(s[i])
        i += 1
    return "".join(out), i + 1


# --- wrappers and hidden scripts --------------------------------------------------------------

_WRAPPER_OPTIONS_WITH_ARGUMENT: dict[str, frozenset[str]] = {
    "sudo": frozenset("-u -g -h -p -C -r -t -U -D -R -T --user --group --host --prompt".split()),
    "doas": frozenset(["-u", "-C"]),
    "run0": frozenset(["-u", "--user", "-g", "--group", "-D", "--chdir"]),
    "pkexec": frozenset(["--user"]),
    "env": frozenset(["-u", "-C", "--unset", "--chdir"]),
    "nice": frozenset(["-n", "--adjustment"]),
    "ionice": frozenset(["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"]),
    "timeout": frozenset(["-s", "-k", "--signal", "--kill-after"]),
    "stdbuf": frozenset(["-i", "-o", "-e", "--input", "--output", "--error"]),
    "xargs": frozenset("-n -L -P -I -d -E -s -a --max-args --max-procs --delimiter".split()),
    "exec": frozenset(["-a"]),
    "setsid": frozenset(),
    "nohup": frozenset(),
    "time": frozenset(["-f", "-o", "--format", "--output"]),
    "command": frozenset(),
    "builtin": frozenset(),
    "unbuffer": frozenset(),
    "caffeinate": frozenset(["-t", "-w"]),
    "chrt": frozenset(),
    "taskset": frozenset(),
    "flock": frozenset(["-w", "-E", "--timeout", "--conflict-exit-code"]),
    "busybox": frozenset(),
    "chroot": frozenset(["--userspec", "--groups"]),
    "strace": frozenset(["-e", "-o", "-p", "-s", "-u"]),
    "ltrace": frozenset(["-e", "-o", "-p", "-s", "-u"]),
    "proxychains": frozenset(["-f"]),
    "proxychains4": frozenset(["-f"]),
    "torsocks": frozenset(),
    "firejail": frozenset(),
}
_WRAPPER_POSITIONALS = {"timeout": 1, "chrt": 1, "taskset": 1, "flock": 1, "chroot": 1}


def _unwrap(words: list[str]) -> list[str] | None:
    """The command a wrapper runs (``sudo rm …`` → ``rm …``), or ``None`` if ``words`` is no
    wrapper."""
    found = _unwrap_at(words, 0)
    if found is None:
        return None
    inner, start = found
    return inner[start:] or None


def _unwrap_at(words: list[str], start: int) -> tuple[list[str], int] | None:
    """:func:`_unwrap` of ``words[start:]`` without copying: the words and the index where the
    wrapped command starts (past the end when there is none), or ``None``."""
    name = words[start] if start < len(words) else ""
    if name in _RUN_WRAPPERS and start + 1 < len(words) and words[start + 1] in ("run", "exec"):
        return _unwrap_runner(words, start)
    if name not in _WRAPPER_OPTIONS_WITH_ARGUMENT:
        return None
    if name == "command" and any(w in ("-v", "-V") for w in words[start + 1 : start + 2]):
        return None
    with_argument = _WRAPPER_OPTIONS_WITH_ARGUMENT[name]
    i, n = start + 1, len(words)
    while i < n:
        word = words[i]
        if word == "--":
            i += 1
            break
        if name in ("sudo", "env", "doas") and _ASSIGN.match(word):
            i += 1
            continue
        if name == "env" and word in ("-S", "--split-string") and i + 1 < n:
            return words[i + 1].split() + words[i + 2 :], 0
        if name == "flock" and word in ("-c", "--command") and i + 1 < n:
            return ["sh", "-c", words[i + 1]], 0
        if word.startswith("-") and len(word) > 1:
            if word in with_argument or (
                word[:2] in with_argument and len(word) > 2 and not word.startswith("--")
            ):
                i += 1 if word[:2] in with_argument and len(word) > 2 else 2
                continue
            i += 1
            continue
        break
    skip = _WRAPPER_POSITIONALS.get(name, 0)
    if name == "chrt" and i < n and not words[i].isdigit():
        skip = 0
    return words, min(i + skip, n)


# Project and environment managers that run a command: ``uv run``, ``poetry run``, ``conda run``…
_RUN_WRAPPERS: dict[str, frozenset[str]] = {
    "uv": frozenset(
        "--with --with-requirements --with-editable --python -p --project --directory"
        " --env-file --extra --group --package --index --index-url --cache-dir"
        " --config-file".split()
    ),  # fmt: skip
    "poetry": frozenset(["-C", "--directory", "-P", "--project"]),
    "pipenv": frozenset(),
    "pdm": frozenset(["-p", "--project"]),
    "hatch": frozenset(["-e", "--env"]),
    "rye": frozenset(["--pyproject"]),
    "conda": frozenset(["-n", "--name", "-p", "--prefix", "--cwd"]),
    "mamba": frozenset(["-n", "--name", "-p", "--prefix", "--cwd"]),
    "micromamba": frozenset(["-n", "--name", "-p", "--prefix", "--cwd"]),
    "pixi": frozenset(["-e", "--environment", "--manifest-path"]),
}


def _unwrap_runner(words: list[str], start: int) -> tuple[list[str], int]:
    """``uv run [options] CMD…`` and the like: the command they run (a ``.py`` file is run by
    Python)."""
    with_argument = _RUN_WRAPPERS[words[start]]
    i, n = start + 2, len(words)
    while i < n:
        word = words[i]
        if word == "--":
            i += 1
            break
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in with_argument else 1
            continue
        break
    if i < n and words[i].endswith(".py"):
        return [*words[:i], "python3", *words[i:]], i
    return words, i


def _strip_all(words: list[str]) -> list[str]:
    words = [w for w in words]
    for _ in range(12):
        if not words:
            return words
        if "/" in words[0]:
            words = [words[0].rsplit("/", 1)[-1]] + words[1:]
        unwrapped = _unwrap(words)
        if unwrapped is None:
            return words
        words = unwrapped
    return words


def _option_argument(args: list[str], letter: str) -> str | None:
    """For ``sh [options] -c SCRIPT``: the SCRIPT, or ``None`` without ``-c``."""
    for i, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and letter in arg[1:]:
            if i + 1 < len(args):
                return args[i + 1]
            return ""
        if not arg.startswith(("-", "+")):
            return None
    return None


def _has_operand(args: list[str]) -> bool:
    """Whether a shell's arguments name a script file (so it does not read stdin)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in ("-o", "+o", "-O", "+O"):
            skip = True
            continue
        if arg == "--":
            return False
        if arg == "-" or arg.startswith(("-", "+")):
            if "s" in arg[1:] and not arg.startswith("--"):
                return False
            continue
        return True
    return False


_FUNCTION = re.compile(
    r"(?:^|(?<=[\s;&|(]))(?:function\s+([\w.:-]+)\s*(?:\(\s*\))?|([\w.:-]+)\s*\(\s*\))\s*\{"
)


def _delete_operands(words: list[str]) -> list[int]:
    """The indexes of the paths a delete command deletes: every operand of ``rm -r``, the
    starting points of ``find`` with ``-delete``/``-exec rm``, the destination of
    ``rsync --delete``; ``[]`` for any other command."""
    name, args = words[0], words[1:]
    if name == "rm":
        options = True
        recursive = False
        found = []
        for i, arg in enumerate(args, 1):
            if options and arg == "--":
                options = False
            elif options and arg.startswith("-") and arg != "-":
                recursive = (
                    recursive
                    or arg == "--recursive"
                    or (not arg.startswith("--") and ("r" in arg or "R" in arg))
                )
            else:
                found.append(i)
        return found if recursive else []
    if name == "find":
        deletes = any(
            w == "-delete" or (w in _FIND_DELETE_WORDS and i + 1 < len(args)
                               and args[i + 1].rsplit("/", 1)[-1] in ("rm", "shred", "unlink"))
            for i, w in enumerate(args)
        )  # fmt: skip
        if not deletes:
            return []
        found = []
        for i, arg in enumerate(args, 1):
            if arg in ("-H", "-L", "-P"):
                continue
            if arg.startswith(("-", "(", "!", ")")):
                break
            found.append(i)
        return found
    if name == "rsync" and any(w.startswith("--del") for w in args):
        operands = [i for i, arg in enumerate(args, 1) if not arg.startswith("-")]
        return operands[-1:] if len(operands) >= 2 else []
    return []


def _with_arguments(body: str, args: list[str]) -> str:
    """A function body with its positional parameters replaced by the call's arguments."""
    quoted = [a.replace('"', "").replace("'", "") for a in args]  # inside or outside quotes

    def one(match: re.Match[str]) -> str:
        key = match.group(1) or match.group(2)
        if key in ("@", "*"):
            return " ".join(quoted)
        index = int(key)
        return quoted[index - 1] if 0 < index <= len(quoted) else ""

    return re.sub(r"\$\{?([@*])\}?|\$\{?(\d)\}?", one, body)


def _first_operand(args: list[str]) -> str:
    """The first argument of a shell or interpreter that is not an option (its script file),
    or ``""``."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-o", "+o", "-O", "+O", "-W", "-X", "-m", "-r", "-I", "--rcfile"):
            skip = arg != "-m"
            if arg == "-m":
                return ""
        elif arg == "-" or not arg.startswith(("-", "+")):
            return arg
    return ""


_INTERPRETER_NAMES = re.compile(rf"^(?:{_INTERPRETERS})$")
_STDIN_READERS = re.compile(
    rf"^(?:{_INTERPRETERS}|psql|mysql|mariadb|sqlite3?|sqlcmd|duckdb|clickhouse(?:-client)?"
    r"|cockroach|cqlsh|mongo(?:sh)?|redis-cli|snowsql|trino|presto|usql|bq)$"
)
_SHEBANG_SHELL = re.compile(rf"[/\s](?:{_SHELLS})(?:\s|$)")
_PYTHON_NAMES = re.compile(r"^(?:python[\d.]*|pypy[\d.]*)$")
_SHEBANG_PYTHON = re.compile(r"[/\s](?:python[\d.]*|pypy[\d.]*)(?:\s|$)")
_SHEBANG_INTERPRETER = re.compile(rf"[/\s](?:{_INTERPRETERS})(?:\s|$)")


_REWRITTEN = "\0written by a program"


def _argv_text(effect: Any) -> str:
    """A program's arguments and redirections (an effect of :mod:`.python_code`) as shell
    text that the parser reads back as the same words."""
    parts = [shlex.quote(word) for word in effect.words]
    parts += [f"{symbol} {shlex.quote(target)}" for symbol, target in effect.redirects]
    return " ".join(parts)


_LITERAL = re.compile(r"'((?:[^'\\\n]|\\.)*)'|\"((?:[^\"\\\n]|\\.)*)\"|`([^`]*)`")
_SPAWNS = re.compile(
    r"\b(?:system|popen\d?|subprocess|spawn\w*|exec\w*|check_output|check_call|call|run"
    r"|getoutput|getstatusoutput|child_process|shell_exec|passthru|proc_open|Command|qx|IO\.popen"
    r"|Open3|Process\.Start|Runtime)\b|`|%x"
)
_TREE_DELETE = re.compile(
    r"\brmtree\b|\brm_rf?\b|FileUtils\.(?:rm|remove)|\brm(?:dir)?Sync\b|\bfs\.(?:promises\.)?rm"
    r"(?:dir)?\b|remove_dir_all|RemoveAll|File::Path|\bremove_tree\b|\brimraf\b|Remove-Item"
    r"|\bdelete_tree\b"
)
_UNSET = re.compile(r"\$\{?(?!PWD\b|OLDPWD\b)[A-Za-z_]\w*\}?")
_SU_SHELL_ARGS = frozenset({"-", "-l", "--login", "root", "-p", "-m", "-s", "--shell"})
_HOME_CALL = re.compile(r"expanduser|Path\.home|homedir|ENV\[.HOME.\]|\$ENV\{HOME\}|Dir\.home")
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "ftp"})
_CRUDE_PREFIXES = frozenset(
    {"eval", "exec", "sudo", "doas", "env", "nohup", "nice", "timeout", "command", "builtin",
     "xargs", "time", "then", "do", "else", "if", "while", "until", "!", "su", "bash", "sh",
     "dash", "zsh", "ksh", "busybox", "setsid", "stdbuf", "ionice", "/bin/sh", "/bin/bash"}
)  # fmt: skip


def _is_decoder(words: list[str]) -> bool:
    name, args = words[0], words[1:]
    if name in ("base64", "base32", "basenc"):
        return any(a in ("-d", "--decode", "-D") or re.match(r"^-[a-zA-Z]*d", a) for a in args)
    if name == "xxd":
        return any(a.startswith("-r") or a == "-p" and "-r" in args for a in args)
    if name == "openssl":
        return any("base64" in a for a in args) and "-d" in args
    return (
        name in ("uudecode", "gunzip", "zcat", "bunzip2", "xz", "unxz")
        and name != "xz"
        or (name == "xz" and "-d" in args)
    )


_ROOT_SHELL_OPTIONS = re.compile(r"^(?:-[a-zA-Z]*[is][a-zA-Z]*|--shell|--login)$")


def _root_shell(words: list[str]) -> bool:
    """Whether ``words`` start an interactive root shell (``sudo -i``, ``sudo su``,
    ``sudo bash``, ``su -``)."""
    name = words[0]
    if name in ("sudo", "doas", "run0", "pkexec"):
        with_argument = _WRAPPER_OPTIONS_WITH_ARGUMENT.get(name, frozenset())
        i = 1
        while i < len(words):
            word = words[i]
            if word == "--":
                i += 1
                break
            if not word.startswith("-") or word == "-":
                break
            if word in with_argument:
                i += 2
                continue
            if _ROOT_SHELL_OPTIONS.match(word) and not word.startswith("--user"):
                return True
            i += 1
        rest = words[i:]
        while rest and _ASSIGN.match(rest[0]):
            rest = rest[1:]
        return bool(rest) and _interactive_shell(rest)
    return False


def _interactive_shell(words: list[str]) -> bool:
    name, args = words[0].rsplit("/", 1)[-1], words[1:]
    if name in ("su", "sudo") and not any(a in ("-c", "--command") for a in args):
        return True
    if _SHELL_NAMES.match(name):
        return _option_argument(args, "c") is None and not _has_operand(args)
    return False


_LONG_OPTIONS: dict[str, tuple[str, ...]] = {
    "rm": ("recursive", "force", "dir", "interactive", "one-file-system", "no-preserve-root",
           "preserve-root", "verbose", "help", "version"),
    "chmod": ("recursive", "reference", "changes", "silent", "quiet", "verbose",
              "no-preserve-root", "preserve-root", "help", "version"),
    "chown": ("recursive", "reference", "changes", "silent", "quiet", "verbose", "from",
              "dereference", "no-dereference", "no-preserve-root", "preserve-root", "help"),
    "chgrp": ("recursive", "reference", "changes", "silent", "quiet", "verbose",
              "dereference", "no-dereference", "no-preserve-root", "preserve-root", "help"),
    "shred": ("force", "iterations", "random-source", "size", "remove", "verbose", "exact",
              "zero", "help"),
    "iptables": ("append", "check", "delete", "insert", "replace", "list", "list-rules",
                 "flush", "zero", "new-chain", "delete-chain", "policy", "rename-chain",
                 "table", "jump", "goto", "source", "destination", "protocol", "verbose"),
    "crontab": ("remove", "edit", "list", "user"),
    "kill": ("signal", "list", "table"),
    "sudo": ("shell", "login", "user", "group", "preserve-env", "non-interactive", "help"),
    "git reset": ("hard", "soft", "mixed", "merge", "keep", "quiet", "no-quiet", "patch",
                  "pathspec-from-file", "pathspec-file-nul", "recurse-submodules",
                  "no-recurse-submodules", "intent-to-add", "refresh", "no-refresh"),
    "git push": ("force", "force-with-lease", "force-if-includes", "delete", "mirror", "all",
                 "branches", "tags", "prune", "dry-run", "porcelain", "set-upstream",
                 "follow-tags", "no-verify", "verify", "atomic", "repo", "receive-pack", "exec",
                 "push-option", "quiet", "verbose", "progress", "signed", "no-signed",
                 "no-force-with-lease", "thin", "no-thin", "ipv4", "ipv6",
                 "recurse-submodules", "no-recurse-submodules"),
    "git clean": ("force", "dry-run", "quiet", "exclude", "interactive"),
    "git branch": ("delete", "force", "move", "copy", "list", "all", "remotes", "verbose",
                   "quiet", "track", "no-track", "set-upstream-to", "unset-upstream",
                   "contains", "no-contains", "merged", "no-merged", "sort", "points-at",
                   "format", "color", "no-color", "column", "no-column", "create-reflog",
                   "edit-description", "show-current", "ignore-case", "abbrev", "no-abbrev"),
    "git checkout": ("force", "quiet", "progress", "no-progress", "ours", "theirs", "track",
                     "no-track", "detach", "orphan", "merge", "conflict", "patch",
                     "ignore-other-worktrees", "overwrite-ignore", "no-overwrite-ignore",
                     "recurse-submodules", "no-recurse-submodules", "overlay", "no-overlay",
                     "pathspec-from-file", "pathspec-file-nul", "guess", "no-guess"),
}  # fmt: skip
_LONG_OPTIONS["ip6tables"] = _LONG_OPTIONS["iptables"]
_GIT_GLOBAL_WITH_ARGUMENT = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})


def _expand_long_options(words: list[str]) -> list[str]:
    """Write unambiguous abbreviations of GNU long options in full (``--recur`` →
    ``--recursive``, ``git reset --har`` → ``--hard``), for the programs whose rules care."""
    name = words[0]
    start = 1
    if name == "git":
        i = 1
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in _GIT_GLOBAL_WITH_ARGUMENT else 1
        if i >= len(words):
            return words
        name, start = f"git {words[i]}", i + 1
    options = _LONG_OPTIONS.get(name)
    if options is None:
        return words
    out = words[:start]
    for word in words[start:]:
        if word.startswith("--") and len(word) > 2:
            head, eq, value = word[2:].partition("=")
            if head not in options:
                matches = [o for o in options if o.startswith(head)]
                if len(matches) == 1:
                    word = f"--{matches[0]}{eq}{value}"
        out.append(word)
    return out


_SSH_WITH_ARGUMENT = frozenset(
    "-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w".split()
)


def _ssh_remote_command(args: list[str]) -> str:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _SSH_WITH_ARGUMENT:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return " ".join(args[i + 1 :])
    return ""


def _fold(pipeline: Sequence[_Command]) -> str | None:
    """The text a pipeline of ``echo``/``printf``/``cat <<EOF`` and decoders writes, when it
    can be known without running anything (a command that ignores its input, like ``echo``,
    starts the text afresh wherever it stands)."""
    text: str | None = None
    for command in pipeline:
        text = _fold_step(text, command)
    return text


def _prefix_folds(pipeline: Sequence[_Command]) -> list[str | None]:
    """``_fold(pipeline[:i])`` for every ``i``, in one pass."""
    folds: list[str | None] = [None]
    for command in pipeline:
        folds.append(_fold_step(folds[-1], command))
    return folds


def _fold_step(text: str | None, command: _Command) -> str | None:
    """What ``command`` writes when ``text`` (``None``: unknown) is its input."""
    words = list(command.words)
    while words and words[0] in _KEYWORDS:
        words = words[1:]
    words = _strip_all(words)
    for _ in range(64):  # eval of plain words runs those words
        if not words or words[0] != "eval" or not all(map(_PLAIN_WORD.fullmatch, words[1:])):
            break
        words = _strip_all(" ".join(words[1:]).split())
    if not words:
        return None
    source = _source_text(words, command)
    if source is not None:
        return source
    return _decode(words, text) if text is not None else None


def _source_text(words: list[str], command: _Command) -> str | None:
    """What ``echo``/``printf``/``cat <<EOF``/``base64 -d <<<`` write whatever their input."""
    name, args = words[0], words[1:]
    if name == "echo":
        escapes = False
        while args and re.match(r"^-[neE]+$", args[0]):
            escapes = escapes or "e" in args[0]
            args = args[1:]
        text = " ".join(args)
        return _decode_escapes(text) if escapes else text
    if name == "printf":
        return _printf(_decode_escapes(args[0]), args[1:]) if args else None
    if name == "cat" and command.stdin_text is not None and len(args) == 0:
        return command.stdin_text
    if command.stdin_text is not None and name in ("base64", "xxd"):
        return _decode(words, command.stdin_text)
    return None


def _printf(fmt: str, values: list[str]) -> str:
    """What ``printf FMT VALUES...`` prints, for ``%s``-style formats."""
    queue = list(values)
    text = re.sub(r"%[sbdq]", lambda _m: queue.pop(0) if queue else "", fmt)
    return text.replace("%%", "%")


def _decode(words: list[str], text: str) -> str | None:
    name, args = words[0], words[1:]
    try:
        if name in ("base64", "basenc") and any(a in ("-d", "--decode", "-D") for a in args):
            return base64.b64decode("".join(text.split()) + "==").decode("utf-8", "replace")
        if name == "base32" and any(a in ("-d", "--decode") for a in args):
            padded = "".join(text.split())
            padded += "=" * (-len(padded) % 8)
            return base64.b32decode(padded).decode("utf-8", "replace")
        if name == "xxd" and any(a.startswith("-r") for a in args):
            return binascii.unhexlify("".join(text.split())).decode("utf-8", "replace")
        if name == "rev":
            return "\n".join(line[::-1] for line in text.split("\n"))
        if name in ("cat", "tee") and not [a for a in args if not a.startswith("-")]:
            return text
    except (ValueError, binascii.Error):
        return None
    return None


def normalise(
    command: str,
    *,
    home: str | None = None,
    cwd: str | None = None,
    read_script: ScriptReader | None = None,
    resolved: Mapping[str, str | None] | None = None,
    list_folder: FolderLister | None = None,
) -> Normalised:
    """All the views of ``command`` (see the module docstring).

    :param home: the home folder to write as ``~`` (default: ``$HOME``).
    :param cwd: the folder the command starts in, when relative paths must be read as absolute
        ones (``None``: relative paths stay relative, inside the working folder).
    :param read_script: reads the script files the command runs; without it they are not read.
    :param resolved: where the delete operands of a first reading (its ``deletes``) really
        lead: an absolute path, seen as well as the operand, or ``None`` (seen as written); an
        operand it does not hold makes the command uncheckable.
    :param list_folder: lists the Python modules of a folder (see :data:`FolderLister`).
    """
    result = Normalised(
        budget=2 * len(command) + 10_000, reader=read_script, lister=list_folder, command=command
    )
    result.resolved = resolved
    if home is None:
        home = os.environ.get("HOME") or None
    analyser = _Analyser(result, home, 0)
    if cwd:
        analyser.cwd = analyser.normalise_path(cwd)
    try:
        analyser.analyse(command.replace("\r\n", "\n"))
    except RecursionError:  # nesting the limits above did not catch: read it crudely
        analyser.give_up(command)
    return result


# --- the checker ------------------------------------------------------------------------------


def scan(
    command: str,
    rules: Sequence[Rule] = RULES,
    *,
    home: str | None = None,
    cwd: str | None = None,
    read_script: ScriptReader | None = None,
    normalised: Normalised | None = None,
    list_folder: FolderLister | None = None,
) -> list[Finding]:
    """Every rule that matches ``command`` (each rule once), hard blocks first."""
    views = normalised or normalise(
        command, home=home, cwd=cwd, read_script=read_script, list_folder=list_folder
    )
    findings: list[Finding] = []
    flat = " ".join(command.split())
    for rule in sorted(rules, key=lambda r: not r.hard):
        if rule.scope == "skeleton":
            texts = views.skeletons
        else:
            texts = views.views
            note = next((n for n in views.notes if rule.regex.search(n)), None)
            if note is not None:
                findings.append(Finding(rule, f"{note}: {flat}"))
                continue
        for text in texts:
            if rule.regex.search(text):
                findings.append(Finding(rule, text))
                break
    return findings


def check(
    command: str,
    rules: Sequence[Rule] = RULES,
    *,
    allow: Sequence[re.Pattern[str]] = (),
    home: str | None = None,
    cwd: str | None = None,
    read_script: ScriptReader | None = None,
    normalised: Normalised | None = None,
    list_folder: FolderLister | None = None,
) -> list[Finding]:
    """What stands between ``command`` and running it: the hard blocks that match (never
    allowed), or else the approval rules that match and that no ``allow`` pattern excuses.

    An ``allow`` pattern excuses a finding when it matches the normalised text the rule matched
    in (one simple command or pipeline), so ``git push --force`` in the allow list does not
    excuse the ``rm -rf`` in ``git push --force && rm -rf build``. ``cwd`` and
    ``read_script``/``list_folder`` are as for :func:`normalise`; ``normalised`` is a reading
    of ``command`` made already.
    """
    findings = scan(
        command,
        rules,
        home=home,
        cwd=cwd,
        read_script=read_script,
        normalised=normalised,
        list_folder=list_folder,
    )
    hard = [f for f in findings if f.hard]
    if hard:
        return hard
    return [f for f in findings if not any(p.search(f.text) for p in allow)]


def sensitive_path(path: str, *, home: str | None = None) -> Finding | None:
    """Whether writing ``path`` touches system configuration, ~/.ssh, shell start-up files,
    credentials, ``.env`` files or hermes' own configuration (for file-writing tools)."""
    word = path.strip()
    if not word:
        return None
    analyser = _Analyser(Normalised(), home or os.environ.get("HOME") or None, 0)
    word = analyser.normalise_path(os.path.expanduser(word) if word.startswith("~") else word)
    word = analyser.normalise_path(word)
    for rule in APPROVAL_RULES:
        if rule.id.startswith("write-") and rule.regex.search(f"> {word}"):
            return Finding(rule, f"> {word}")
    return None
