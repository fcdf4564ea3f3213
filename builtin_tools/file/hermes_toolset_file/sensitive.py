"""Which paths the file tools may not touch without approval.

Writing: the command policy's rules (:func:`hermes_policy_commands.paths.write_concern`: system
configuration, ``~/.ssh``, shell start-up files, credential files, ``.env`` files, hermes' own
configuration), plus the hermes home folder wherever ``$HERMES_HOME`` puts it.

Reading: the files that hold secrets (:data:`READ_RULES`): password hashes and host keys, SSH
keys, cloud and registry credentials, ``$HERMES_HOME/.env`` and the environment of processes.

Every check looks at both spellings of a path: as written (``~`` expanded, ``..`` folded) and as
resolved (every symlink followed), so neither a symlink nor a detour through ``..`` hides a file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from hermes_policy_commands.paths import write_concern

__all__ = ["READ_RULES", "Concern", "PathRule", "read_concerns", "write_concerns"]


@dataclass(frozen=True)
class Concern:
    """Why touching one path needs approval: a rule id and a description for people."""

    rule: str
    description: str


@dataclass(frozen=True)
class PathRule:
    """A family of files that hold secrets.

    :param id: stable name, shown to the model and part of the approval key.
    :param description: what the files are, for people.
    :param pattern: a regular expression searched in the absolute path, and again in the path
        written from the home folder (``~/.aws/credentials``).
    """

    id: str
    description: str
    pattern: str

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """The compiled pattern."""
        return re.compile(self.pattern)


READ_RULES: tuple[PathRule, ...] = (
    PathRule(
        "read-system-secrets",
        "system password hashes, sudo rules or SSH host keys",
        r"^(?:/private)?/etc/(?:g?shadow-?|master\.passwd|spwd\.db|security/opasswd|sudoers"
        r"(?:\.d/.*)?|ssh/ssh_host_[^/]*_key)$",
    ),
    PathRule("read-ssh", "SSH keys and configuration (~/.ssh)", r"(?:^|/)\.ssh(?:/|$)"),
    PathRule(
        "read-credentials",
        "a credential file",
        r"(?:^|/)(?:\.aws|\.azure|\.config/gcloud|\.kube|\.gnupg|\.docker/config\.json|\.netrc"
        r"|\.pgpass|\.git-credentials|\.pypirc|\.npmrc|\.my\.cnf|\.boto|\.s3cfg|\.vault-token"
        r"|\.terraformrc|\.terraform\.d/credentials\.tfrc\.json|\.cargo/credentials(?:\.toml)?"
        r"|\.config/gh/hosts\.yml|\.config/hub|\.gem/credentials"
        r"|id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?)(?:/|$)",
    ),
    PathRule(
        "read-hermes-secrets",
        "hermes' secrets and stored conversations ($HERMES_HOME/.env, sessions.db)",
        r"(?:^|/)\.hermes/(?:profiles/[^/]+/)?(?:\.env|(?:sessions|state)\.db[\w-]*|auth\.json)$",
    ),
    PathRule(
        "read-process-environment",
        "the environment variables of a process (they hold API keys)",
        r"^/proc/[^/]+/(?:task/[^/]+/)?environ$",
    ),
)


_ANY_READ_RULE = re.compile("|".join(f"(?:{rule.pattern})" for rule in READ_RULES))


def _spellings(paths: Iterable[str | None], home: str) -> list[str]:
    """Each absolute path, and the same path written from the home folder when it is inside."""
    out: list[str] = []
    home = home.rstrip("/")
    for path in paths:
        if not path:
            continue
        out.append(path)
        if home and (path == home or path.startswith(home + "/")):
            out.append("~" + path[len(home) :])
    return out


def _inside(path: str, folder: str) -> bool:
    folder = folder.rstrip("/") or "/"
    return folder == "/" or path == folder or path.startswith(folder + "/")


_HERMES_SECRET = r"(?:profiles/[^/]+/)?(?:\.env|(?:sessions|state)\.db[\w-]*|auth\.json)"
"""What in a hermes home holds secrets: its ``.env``, its session store, its logins."""


def _hermes_secret(path: str, hermes_home: str) -> bool:
    if not hermes_home.rstrip("/") or not _inside(path, hermes_home):
        return False
    relative = posixpath.relpath(path, hermes_home)
    return bool(re.fullmatch(_HERMES_SECRET, relative))


def read_concerns(
    paths: Iterable[str | None], *, home: str = "", hermes_homes: Iterable[str] = ()
) -> list[Concern]:
    """The rules reading a file at any of ``paths`` (its spellings) falls under, each once."""
    given = [p for p in paths if p]
    spellings = _spellings(given, home)
    concerns = []
    if any(_ANY_READ_RULE.search(s) for s in spellings):  # one search for the usual no
        found = [r for r in READ_RULES if any(r.regex.search(s) for s in spellings)]
        concerns = [Concern(r.id, r.description) for r in found]
    if not any(c.rule == "read-hermes-secrets" for c in concerns) and any(
        _hermes_secret(p, h) for p in given for h in hermes_homes
    ):
        rule = next(r for r in READ_RULES if r.id == "read-hermes-secrets")
        concerns.append(Concern(rule.id, rule.description))
    return concerns


def write_concerns(
    paths: Iterable[str | None], *, home: str = "", hermes_homes: Iterable[str] = ()
) -> list[Concern]:
    """The command policy's write rules that writing a file at any of ``paths`` falls under,
    plus the hermes home folder itself, each once."""
    given = [p for p in paths if p]
    concerns: list[Concern] = []
    for path in given:
        found = write_concern(path, home=home or None)
        if found is not None and all(c.rule != found[0] for c in concerns):
            concerns.append(Concern(found[0], found[1]))
    if not any(c.rule == "write-hermes-config" for c in concerns) and any(
        _inside(p, h) for p in given for h in hermes_homes if h.rstrip("/")
    ):
        concerns.append(Concern("write-hermes-config", "writes to hermes' own configuration"))
    return concerns
