"""What the lowering knows about programs (data): which run another program and how its argv is
found, which run code in another language, and which operands each one writes.

``wraps``: the program runs the command that follows its own options; ``options``: its options
that take a value; ``skip``: positional words before the command (``timeout 10 CMD``);
``prefix``: words that must come first (``uv run CMD``); ``code``: options whose value is shell
code; ``assignments``: ``NAME=value`` words are skipped. ``lang``: the program runs code of that
language (``code``: the options that take the code inline). ``writes``: which operands it writes
(``all``, ``after-first``: all but the mode or owner, ``last``, ``last-or-only`` when one
operand is written too, ``in-place``: all but the
first with ``-i``, ``NAME=``: the value of such words, ``-o``: the value of that option,
``download``: where curl or wget save);
``fills``: whether what it writes gets new content. ``manifests``: the files whose scripts it
runs (a command that writes one and then runs the program asks). ``joined``: the wrapped words
are one shell command (``ssh host CMD``). ``local_tools``: the program runs a tool of the
workspace's ``node_modules/.bin`` when there is one (``npx TOOL``), else downloads it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = ["PROGRAMS", "canonical"]

_W: dict[str, dict[str, Any]] = {
    "sudo": {"options": ["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user"]},
    "doas": {"options": ["-u", "-C"]},
    "env": {
        "options": ["-u", "--unset", "-C", "--chdir"],
        "assignments": True,
        "code": ["-S", "--split-string"],
    },
    "nice": {"options": ["-n", "--adjustment"]},
    "nohup": {},
    "timeout": {"options": ["-s", "-k", "--signal", "--kill-after"], "skip": 1},
    "stdbuf": {"options": ["-i", "-o", "-e"]},
    "command": {"options": []},
    "builtin": {},
    "exec": {"options": ["-a"]},
    "time": {"options": ["-f", "-o"]},
    "busybox": {},
    "toybox": {},
    "coproc": {},
    "chroot": {"skip": 1},
    "setsid": {},
    "ionice": {"options": ["-c", "-n", "-p"]},
    "taskset": {"skip": 1},
    "flock": {"options": ["-w", "-E"], "skip": 1, "code": ["-c"]},
    "unshare": {},
    "nsenter": {"options": ["-t", "--target"]},
    "pkexec": {"options": ["--user"]},
    "runuser": {"options": ["-u", "--user", "-g", "--group", "-G"], "code": ["-c", "--command"]},
    "sg": {"code": ["-c"], "skip": 1},
    "gosu": {"skip": 1},
    "su-exec": {"skip": 1},
    "chrt": {"options": ["-T", "-P", "-D"], "skip": 1},
    "numactl": {"options": ["-N", "-m", "-C", "-p", "-i", "-P"]},
    "prlimit": {"options": ["-p", "--pid"]},
    "unbuffer": {"options": []},
    "faketime": {"options": ["-m", "-f"], "skip": 1},
    "cpulimit": {"options": ["-l", "--limit", "-p", "--pid", "-e", "--exe"]},
    "nocache": {},
    "eatmydata": {},
    "fakeroot": {"options": ["-l", "--lib", "--faked", "-s", "-i"]},
    "proot": {"options": ["-r", "-b", "-w", "-q", "-k"]},
    "torsocks": {"options": ["-u", "-p", "-a", "-P"]},
    "proxychains": {"options": ["-f"]},
    "proxychains4": {"options": ["-f"]},
    "xvfb-run": {"options": ["-n", "-s", "-f", "-e", "-p", "--server-num", "--server-args"]},
    "dbus-run-session": {"options": ["--config-file", "--dbus-daemon"]},
    "ssh-agent": {"options": ["-a", "-E", "-t", "-P"]},
    "valgrind": {"options": []},
    "catchsegv": {},
    "parallel": {"options": ["-j", "--jobs", "-S", "--sshlogin", "-a", "--arg-file", "--delay"]},
    "watch": {"options": ["-n", "-d", "--interval"], "joined": True},
    "script": {"code": ["-c"], "options": []},
    "strace": {"options": ["-o", "-e", "-p", "-s"]},
    "ltrace": {"options": ["-o", "-e", "-p"]},
    "systemd-run": {"options": ["-p", "--unit", "-u", "--property", "-E", "--setenv"]},
    "su": {"options": ["-s", "--shell", "-g", "-G"], "code": ["-c", "--command"], "skip": 1},
    "ssh-wrapper": {
        "options": [
            "-p",
            "-i",
            "-l",
            "-o",
            "-F",
            "-J",
            "-L",
            "-R",
            "-D",
            "-b",
            "-c",
            "-E",
            "-e",
            "-m",
            "-O",
            "-Q",
            "-S",
            "-W",
            "-w",
            "-B",
            "-I",
        ],
        "skip": 1,
    },
    "uv": {
        "prefix": ["run"],
        "options": [
            "--with",
            "--python",
            "-p",
            "--project",
            "--directory",
            "--package",
            "--extra",
            "--group",
        ],
    },
    "poetry": {"prefix": ["run"]},
    "pdm": {"prefix": ["run"]},
    "hatch": {"prefix": ["run"]},
    "pipenv": {"prefix": ["run"]},
    "conda": {"prefix": ["run"], "options": ["-n", "--name", "-p", "--prefix"]},
    "xargs": {
        "options": [
            "-I",
            "-n",
            "-P",
            "-d",
            "-a",
            "-L",
            "-s",
            "-E",
            "--max-args",
            "--delimiter",
            "--arg-file",
            "--max-procs",
        ]
    },
}
_LANGS: dict[str, dict[str, Any]] = {
    "python": {"lang": "python", "code": ["-c"], "options": ["-W", "-X", "-Q"]},
    "perl": {"lang": "perl", "code": ["-e", "-E"], "options": ["-M", "-I"]},
    "ruby": {"lang": "ruby", "code": ["-e"], "options": ["-r", "-I"]},
    "node": {"lang": "node", "code": ["-e", "--eval", "-p", "--print"], "options": ["-r"]},
    "php": {"lang": "php", "code": ["-r"], "options": ["-d", "-c"]},
}
# What each program writes; _FILLS give the files new content (a script written so is not read
# from the disk: the command asks), _CHANGES change or remove files.
_FILLS: dict[str, str] = {
    "tee": "all",
    "cp": "last",
    "mv": "last",
    "install": "last-or-only",
    "ln": "last-or-only",
    "rsync": "last",
    "scp": "last",
    "truncate": "all",
    "dd": "of=",
    "git": "--output=",
    "sed": "in-place",
    "perl": "in-place",
    "ruby": "in-place",
    "awk": "in-place",
    "gawk": "in-place",
    "yq": "in-place",
    "sort": "-o",
    "iconv": "-o",
    "uniq": "last",
    "sponge": "all",
    "ed": "all",
    "red": "all",
    "dos2unix": "all",
    "unix2dos": "all",
    "sd": "all",
    "patch": "all",
    "curl": "download",
    "wget": "download",
}
_CHANGES: dict[str, str] = {
    "touch": "all",
    "shred": "all",
    "rm": "all",
    "unlink": "all",
    "rmdir": "all",
    "mkdir": "all",
    "chmod": "after-first",
    "chown": "after-first",
    "chgrp": "after-first",
    "mkfs": "all",
    "wipefs": "all",
    "blkdiscard": "all",
    "mkswap": "all",
    "mke2fs": "all",
    "setfacl": "all",
    "chattr": "all",
}

# Programs that run a command elsewhere (another host, a container) wrap it too: what they run
# is judged.
_REMOTE: dict[str, dict[str, Any]] = {
    "ssh": {**_W.pop("ssh-wrapper"), "joined": True},
    "docker": {
        "prefix": ["exec"],
        "skip": 1,
        "options": ["-u", "-w", "-e", "--user", "--workdir", "--env", "--env-file"],
    },
    "podman": {"prefix": ["exec"], "skip": 1, "options": ["-u", "-w", "-e"]},
    "kubectl": {
        "prefix": ["exec"],
        "skip": 1,
        "options": ["-c", "-n", "--container", "--namespace", "--context"],
    },
}
PROGRAMS: dict[str, dict[str, Any]] = {}
for _name, _spec in {**_W, **_REMOTE}.items():
    PROGRAMS[_name] = {**_spec, "wraps": True, "name": _name}
_SHELLS = ("sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "hush", "yash", "posh",
           "lksh", "oksh", "pdksh", "loksh", "bosh")  # fmt: skip
for _shell in _SHELLS:
    PROGRAMS[_shell] = {"lang": "", "code": ["-c"], "options": ["-o", "+o"], "name": _shell}
_VERSIONS = ("2", "3", *(f"3.{n}" for n in range(6, 15)))
for _base, _spec in _LANGS.items():
    _names = [_base, *(_base + v for v in _VERSIONS)] if _base == "python" else [_base]
    for _alias in _names + (["nodejs"] if _base == "node" else []):
        PROGRAMS[_alias] = {**_spec, "name": _base}
_VALUES: dict[str, list[str]] = {
    "git": ["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"],
    "docker": ["-H", "--host", "--context", "-c", "--config"],
    "kubectl": ["-n", "--namespace", "--context", "--cluster", "--kubeconfig", "-l"],
    "psql": ["-d", "-U", "-h", "-p", "-f", "--dbname", "--host", "--username"],
    "mysql": ["-u", "-h", "-P", "-D", "--user", "--host", "--database"],
    "terraform": ["-chdir", "-var", "-var-file"],
    "npm": ["--prefix", "-w", "--workspace"],
    "pip": ["-r", "-c", "-i", "--index-url", "--target", "-t"],
}
for _name, _values in _VALUES.items():
    PROGRAMS.setdefault(_name, {})["values"] = _values
for _name, _how in {**_FILLS, **_CHANGES}.items():
    PROGRAMS.setdefault(_name, {}).update(writes=_how, fills=_name in _FILLS)
# long options that are whole names, not abbreviations of a longer one (--checkpoint-action)
PROGRAMS.setdefault("tar", {})["exact"] = ["--checkpoint", "--to-stdout", "--totals"]
for _name in ("npx", "pnpx", "bunx"):  # runs node_modules/.bin/TOOL when the workspace has it
    PROGRAMS.setdefault(_name, {})["local_tools"] = True
_MANIFESTS = {"make": ["Makefile", "makefile", "GNUmakefile"], "npm": ["package.json"]}
for _name in ("yarn", "pnpm", "bun"):
    _MANIFESTS[_name] = _MANIFESTS["npm"]
for _name, _files in _MANIFESTS.items():
    PROGRAMS.setdefault(_name, {})["manifests"] = _files

_FAMILIES = [
    (re.compile(r"(?:python|pypy|ipython|jython|graalpy|micropython|bpython|cpython)"
                r"[\d.]*(?:-dbg|-config)?[mdtu]?"), "python3"),
    (re.compile(r"(?:node|nodejs)[\d.]*|tsx|ts-node|esno|esr|vite-node|ts-node-esm"), "node"),
    (re.compile(r"perl[\d.]*"), "perl"),
    (re.compile(r"ruby[\d.]*|jruby|truffleruby"), "ruby"),
    (re.compile(r"php[\d.]*(?:-cli)?"), "php"),
    (re.compile(r"(" + "|".join(_SHELLS) + r")-?[\d.]+(?:-static)?"), ""),
]  # fmt: skip
"""Names a program goes by besides its own (versions, other implementations): the program the
policy reads them as (``""``: the shell of that name without its version)."""


@lru_cache(maxsize=4096)
def canonical(name: str) -> str:
    """The program the policy knows ``name`` (a command's base name) as: itself, or the program
    it is a version or another implementation of (``pypy3`` and ``python2.7`` are ``python3``,
    ``tsx`` is ``node``, ``bash5.2`` is ``bash``)."""
    if name in PROGRAMS or not name[:1].isalpha():
        return name
    for pattern, known in _FAMILIES:
        if m := pattern.fullmatch(name):
            return known or m.group(1)
    return name
