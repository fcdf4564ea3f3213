"""The decision: each simple command of a command against rules written as data.

A rule (:class:`Rule`, loaded from ``rules/*.toml`` or from the ``approvals.rules`` config key)
is a pattern over one simple command: the program, its subcommand words, its options, the
classes of the paths it names, reads or writes (:func:`classify`), a regular expression over its
arguments or the text it reads, the wrappers it was reached through and what the reading noted.
Each rule has a decision (``allow``, ``ask``, ``never``), a one-line justification, and examples
that must and must not match; :func:`policy.load_rules` checks them, so a rule that stops matching
its own examples is an error at load.

The decision of a command is the strictest of its simple commands'; ``never`` is refused
whatever approved it, ``ask`` asks a person, ``allow`` runs. What the reading could not resolve
asks (the ``unresolved`` family).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, cached_property, lru_cache
from importlib import resources
from typing import Any, NamedTuple

from hermes_runtime.secret_classes import secret_classes, toolchain_paths

from .tables import TABLES
from .words import UNKNOWN, Arguments, Simple

__all__ = [
    "DECISIONS",
    "Finding",
    "Rule",
    "RuleError",
    "classify",
    "judge",
    "rule_from_mapping",
]

DECISIONS = ("allow", "ask", "never")
_RANK = {d: i for i, d in enumerate(DECISIONS)}
_CATASTROPHIC = frozenset({"root", "system-top", "home-top"})
_PATHS = TABLES["paths"]
_BUILD = re.compile(f"^(?:{_PATHS['build']})$")
_GLOB = re.compile(r"[*?]|\[[^]]*\]")  # a pattern: what it removes to find the folder
_OTHER_HOME = re.compile(r"~[a-z_][\w-]*(?:/|$)")
_BASE = {n: re.compile(p.replace("{build}", _PATHS["build"])) for n, p in _PATHS["base"].items()}
_SHARED = {c.name: c.pattern for c in secret_classes()}  # one list with the sandbox's
_PATTERNS: tuple[tuple[str, str], ...] = (*_SHARED.items(), *_PATHS["classes"].items())
_CLASS_RE = {name: re.compile(p) for name, p in _PATTERNS}
_ANY_CLASS = re.compile("|".join(f"(?:{p})" for _, p in _PATTERNS))
_CLASS_HEADS, _CLASS_WORDS = tuple(_PATHS["class_heads"]), tuple(_PATHS["class_words"])
_SECRET, _NOT_READING = frozenset(_SHARED), frozenset(_PATHS["not_reading"])
_SECRETS = _SECRET | {"secret"}


class RuleError(ValueError):
    """A rule that is malformed or fails its own examples."""


@dataclass(frozen=True)
class Finding:
    """One rule that matched one simple command.

    :param rule: the rule.
    :param text: the simple command as shown to people (its target).
    """

    rule: Rule
    text: str

    @property
    def decision(self) -> str:
        """The rule's decision."""
        return self.rule.decision

    @property
    def hard(self) -> bool:
        """Whether the command is refused whatever approved it."""
        return self.rule.decision == "never"

    @property
    def description(self) -> str:
        """The rule's justification."""
        return self.rule.justification


@dataclass(frozen=True)
class Rule:
    """One rule: a pattern over a simple command, a decision, a justification, examples.

    Every pattern field that is set must match; list fields match when any item does.
    """

    id: str
    decision: str
    justification: str
    program: tuple[str, ...] = ("*",)
    subcommand: tuple[tuple[str, ...], ...] = ()
    options: tuple[str, ...] = ()
    all_options: tuple[str, ...] = ()
    not_options: tuple[str, ...] = ()
    operands: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    reads: frozenset[str] = frozenset()
    args: re.Pattern[str] | None = None
    not_args: re.Pattern[str] | None = None
    text: re.Pattern[str] | None = None
    command: re.Pattern[str] | None = None
    via: frozenset[str] = frozenset()
    notes: frozenset[str] = frozenset()
    not_notes: frozenset[str] = frozenset()
    contained_by: frozenset[str] = frozenset()
    contained: str = ""
    max_args: int | None = None
    match: tuple[str, ...] = ()
    not_match: tuple[str, ...] = ()
    family: str = ""
    source: str = "builtin"

    def matches(self, simple: Simple, facts: Facts) -> bool:
        """Whether the rule matches ``simple`` (whose paths are classified in ``facts``); its
        program is one the rule is about (the :class:`Index` chose the rule by it)."""
        words, given = self.subcommand, facts.positional
        return (
            (not self.notes or not self.notes.isdisjoint(simple.notes))
            and self.not_notes.isdisjoint(simple.notes)
            and (not self.via or not self.via.isdisjoint(simple.via))
            and (self.max_args is None or len(simple.argv) - 1 <= self.max_args)
            and (not words or len(given) >= len(words) and all(map(_word_matches, words, given)))
            and (not self.options or any(map(facts.has, self.options)))
            and (not self.all_options or all(map(facts.has, self.all_options)))
            and not (self.not_options and any(map(facts.has, self.not_options)))
            and (self.args is None or self.args.search(facts.joined) is not None)
            and (self.not_args is None or self.not_args.search(facts.joined) is None)
            and (self.text is None or self.text.search(facts.text) is not None)
            and (not self.operands or not self.operands.isdisjoint(facts.operand_classes))
            and (not self.writes or not self.writes.isdisjoint(facts.write_classes))
            and (not self.reads or not self.reads.isdisjoint(facts.read_classes))
        )

    def runs(self, program: str) -> bool:
        """Whether the rule is about ``program`` (one of its ``program`` patterns matches)."""
        return self.program == ("*",) or bool(program and _globs(self.program).match(program))


@lru_cache(maxsize=1024)
def _globs(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(fnmatch.translate(p) for p in patterns))


def _word_matches(patterns: tuple[str, ...], word: str) -> bool:
    return _globs(patterns).match(word.lower()) is not None


class Context(NamedTuple):
    """Where a command runs: the home folder (``~``), the workspace, hermes's home, the walls
    of the sandbox around it (``sandbox``: the parent's environment, hidden home and secrets;
    ``offline``: no network) and the paths of the home folder besides the toolchains' that
    commands may see (``~/...``)."""

    home: str = ""
    workspace: str = ""
    hermes_home: str = ""
    walls: frozenset[str] = frozenset()
    home_allow: tuple[str, ...] = ()


class Facts(Arguments):
    """What the rules look at in one simple command, worked out once."""

    def __init__(self, simple: Simple, context: Context) -> None:
        super().__init__(simple.argv)
        self.simple, self.context = simple, context
        self.joined = " ".join(simple.argv[1:])

    @cached_property
    def text(self) -> str:
        """The arguments and the text the command reads on stdin."""
        stdin = self.simple.stdin
        return self.joined + ("\n" + stdin if stdin else "")

    @cached_property
    def target(self) -> str:
        """The simple command as shown to people (:meth:`Simple.render`)."""
        return self.simple.render()

    def _classes(self, paths: Sequence[str]) -> frozenset[str]:
        cwd, context = self.simple.cwd, self.context
        return frozenset().union(*(classify(p, cwd, context) for p in paths))

    @cached_property
    def operand_classes(self) -> frozenset[str]:
        """The classes of the positional operands."""
        return self._classes(self.positional)

    @cached_property
    def write_classes(self) -> frozenset[str]:
        """The classes of the paths the command writes (redirections and written operands)."""
        written = [t for op, t in self.simple.redirects if op != "<"]
        return self._classes(written + self.written())

    @cached_property
    def read_classes(self) -> frozenset[str]:
        """The classes of the paths the command reads (operands and ``<`` redirections)."""
        read = [t for op, t in self.simple.redirects if op == "<"]
        if self.program not in _NOT_READING:
            read += self.positional
            read += [o.split("=", 1)[1] for o in self.options if "=" in o]
            read += [o[1:] for o in self.positional if o.startswith("@")]
        return self._classes(read)


def _lexical(path: str, cwd: str | None, context: Context) -> str:
    workspace = context.workspace.rstrip("/")
    if workspace and (path == workspace or path.startswith(workspace + "/")):
        path = "." + path[len(workspace) :]
    home = context.home.rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        path = "~" + path[len(home) :]
    if path.startswith("~") and _OTHER_HOME.match(path):
        user, _, rest = path[1:].partition("/")
        path = ("/root" if user == "root" else "/home/" + user) + ("/" + rest if rest else "")
    if not path.startswith(("/", "~")) and cwd:
        path = posixpath.join(_folder(cwd, context), path)
    if path.startswith("~"):
        return ("~" + posixpath.normpath("/" + path[1:].lstrip("/"))).rstrip("/")
    path = posixpath.normpath(path) if path else "."
    return "/" + path.lstrip("/") if path.startswith("//") else path


@lru_cache(maxsize=256)
def _folder(cwd: str, context: Context) -> str:
    return _lexical(cwd, None, context)


@lru_cache(maxsize=16384)
def classify(path: str, cwd: str | None = None, context: Context | None = None) -> frozenset[str]:
    """The classes of ``path`` (``root``, ``system-top``, ``system``, ``home-top``, ``home``,
    ``workspace-self``, ``workspace``, ``build``, ``nonbuild``, ``outside``, ``unknown``,
    ``secret`` and the finer classes of :data:`_PATTERNS`), for a command started in ``cwd``."""
    context = context or Context()
    if UNKNOWN in path or (cwd is not None and UNKNOWN in cwd):
        cwd = (cwd or "").replace(UNKNOWN, "") or None
        empty = classify(path.replace(UNKNOWN, ""), cwd, context)
        secret = classify(path.replace(UNKNOWN, "1"), cwd, context) & _SECRETS  # /proc/$$/environ
        anywhere = {"unknown-place"} if path.startswith(UNKNOWN) else set()  # "$f", not "src/$f"
        return (empty & (_CATASTROPHIC | {"device"})) | secret | anywhere | {"unknown", "nonbuild"}
    head, _, last = path.rpartition("/")
    if _GLOB.search(last) and not _BUILD.match(last):  # not a lone [ (cat "[" once recursed)
        inner = classify(head or ("/" if path.startswith("/") else "."), cwd, context)
        inner |= classify(_GLOB.sub("", path), cwd, context) & _SECRETS  # id_*
        inner |= {"home-private"} if "home-top" in inner else set()  # ~/*: any file of home
        return inner | ({"workspace-self"} if "workspace" in inner and not head else set())
    return _classify_plain(_lexical(path, cwd, context), context)


def _probe(p: str) -> str:
    """The part of ``p`` the finer classes can match: all of it, or its last part when only
    that holds a dot (the common case of a file deep in the workspace), or nothing."""
    if p.startswith(_CLASS_HEADS) or any(w in p for w in _CLASS_WORDS):
        return p
    if "/." in p or p.startswith(".") or ".config/" in p:
        return p
    last = p.rpartition("/")[2]
    return "/" + last if "." in last else ""


@lru_cache(maxsize=4096)
def _classify_plain(p: str, context: Context) -> frozenset[str]:
    classes = {name for name, rx in _BASE.items() if rx.search(p)}
    if "build" not in classes:
        classes.add("nonbuild")
    hermes_home = context.hermes_home.rstrip("/")
    if hermes_home and (p == hermes_home or p.startswith(hermes_home + "/")):
        classes.add("hermes")
    if p[:2] == "~/" and not _home_shown(p[2:], context.home_allow):
        classes.add("home-private")
    probe = _probe(p)
    if probe and _ANY_CLASS.search(probe):
        classes |= {name for name, rx in _CLASS_RE.items() if rx.search(p)}
        if classes & _SECRET:
            classes.add("secret")
    return frozenset(classes)


@lru_cache(maxsize=64)
def _shown(extra: tuple[str, ...]) -> re.Pattern[str]:
    """The paths of the home folder commands may see: the toolchains' and ``extra``."""
    patterns = [*toolchain_paths(), *(p.removeprefix("~/") for p in extra)]
    parts = (fnmatch.translate(p).removeprefix("(?s:").removesuffix(r")\Z") for p in patterns)
    return re.compile(r"(?s:(?:" + "|".join(parts) + r"))(?:/|\Z)")


def _home_shown(rest: str, extra: tuple[str, ...]) -> bool:
    return _shown(extra).match(rest) is not None


# --- rules as data ------------------------------------------------------------------------

_LISTS = ("program", "options", "all_options", "not_options", "match", "not_match")
_SETS = ("operands", "writes", "reads", "via", "notes", "not_notes", "contained_by")
_STRINGS: dict[str, type] = {**dict.fromkeys(_LISTS, tuple), **dict.fromkeys(_SETS, frozenset)}
"""The keys whose value is a string or a list of strings, and the collection each becomes."""
_REGEXES = ("args", "not_args", "text", "command")
_KNOWN = {"id", "decision", "justification", "subcommand", "max_args", "contained", *_STRINGS,
          *_REGEXES}  # fmt: skip


def _strings(value: Any, where: str, key: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise RuleError(f"{where}: {key} must be a string or a list of strings")
    return tuple(items)


def rule_from_mapping(data: Mapping[str, Any], where: str, source: str = "builtin") -> Rule:
    """A :class:`Rule` from its data (one TOML table, or one ``approvals.rules`` entry);
    :class:`RuleError` when it is malformed (:func:`policy.load_rules` checks its examples)."""
    if not isinstance(data, Mapping):
        raise RuleError(f"{where} must be a mapping")
    fields = _head(data, where)
    family, where = where.split(":")[0], f"{where} ({fields['id']})"
    for key in data.keys() & _STRINGS.keys():
        fields[key] = _STRINGS[key](_strings(data[key], where, key))
    for key in _REGEXES:
        if key in data:
            try:
                fields[key] = re.compile(str(data[key]))
            except re.error as exc:
                raise RuleError(f"{where}: {key}: invalid regular expression: {exc}") from None
    if "subcommand" in data:
        words = data["subcommand"]
        words = words.split() if isinstance(words, str) else words
        if not isinstance(words, list):
            raise RuleError(f"{where}: subcommand must be a string or a list")
        fields["subcommand"] = tuple(_strings(w, where, "subcommand") for w in words)
    if "contained" in data or "contained_by" in data:
        if not isinstance(data.get("contained"), str) or not fields.get("contained_by"):
            raise RuleError(f"{where}: contained (one line) goes with contained_by (walls)")
        fields["contained"] = data["contained"].strip()
    if "max_args" in data:
        if not isinstance(data["max_args"], int):
            raise RuleError(f"{where}: max_args must be an integer")
        fields["max_args"] = data["max_args"]
    return Rule(**fields, family=family, source=source)


def _head(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The id, decision and justification of a rule's data, checked."""
    unknown = set(data) - _KNOWN
    rule_id, decision, why = data.get("id"), data.get("decision"), data.get("justification")
    if unknown:
        raise RuleError(f"{where}: unknown keys {sorted(unknown)}")
    if not isinstance(rule_id, str) or not rule_id:
        raise RuleError(f"{where}: id must be a non-empty string")
    if decision not in DECISIONS:
        raise RuleError(f"{where} ({rule_id}): decision must be one of {', '.join(DECISIONS)}")
    if not isinstance(why, str) or not why.strip() or "\n" in why.strip():
        raise RuleError(f"{where} ({rule_id}): justification must be one line of text")
    return {"id": rule_id, "decision": decision, "justification": why.strip()}


def check_examples(rules: Sequence[Rule], judge_one: Any) -> None:
    """Raise :class:`RuleError` for the first rule whose examples disagree with it: each
    ``match`` example must be matched by the rule, each ``not_match`` must not be."""
    for rule in rules:
        for example in rule.match:
            if not any(f.rule is rule for f in judge_one(example, rules)):
                raise RuleError(f"rule {rule.id} does not match its example {example!r}")
        for example in rule.not_match:
            if any(f.rule is rule for f in judge_one(example, rules)):
                raise RuleError(f"rule {rule.id} matches its counter-example {example!r}")


@cache
def builtin_rules() -> tuple[Rule, ...]:
    """Every rule of the ``rules`` folder, family by family (file name order)."""
    rules: list[Rule] = []
    folder = resources.files("hermes_policy_commands") / "rules"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            items = tomllib.loads(entry.read_text(encoding="utf-8")).get("rule", [])
            where = entry.name.removesuffix(".toml") + ": rule "
            rules += [rule_from_mapping(item, f"{where}{i + 1}") for i, item in enumerate(items)]
    ids = [r.id for r in rules]
    if len(ids) != len(set(ids)):
        raise RuleError(f"duplicate rule ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    return tuple(rules)


class Index(dict[str, list[Rule]]):
    """The rules each program's simple commands are tried against (its own, the globs that
    match its name and the ``*`` ones, in the rules' order), worked out once per program:
    ``index[program]``."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        super().__init__()
        self.rules = rules

    def __missing__(self, program: str) -> list[Rule]:
        if len(self) > 4096:
            self.clear()
        found = self[program] = [r for r in self.rules if r.command is None and r.runs(program)]
        return found


def judge(simples: Sequence[Simple], index: Index, context: Context) -> list[Finding]:
    """Every rule that matches one of ``simples``, each (rule, target) once."""
    found: dict[tuple[str, str], Finding] = {}
    seen: set[tuple[Any, ...]] = set()
    for simple in simples:
        # the same simple command again, or in a folder that gives its paths the same classes
        where = simple.cwd and tuple(classify(w, simple.cwd, context) for w in _path_words(simple))
        key = (*simple.argv, *simple.redirects, simple.via, simple.stdin, simple.notes, where)
        if key in seen:
            continue
        seen.add(key)
        facts = Facts(simple, context)
        for rule in index[facts.program]:
            if rule.matches(simple, facts) and (rule.id, facts.target) not in found:
                if rule.contained_by and rule.contained_by <= context.walls:
                    rule = _contained(rule)
                found[rule.id, facts.target] = Finding(rule, facts.target)
    return list(found.values())


@lru_cache(maxsize=256)
def _contained(rule: Rule) -> Rule:
    """``rule`` where the sandbox's walls contain what it is about: it allows, and says why."""
    return replace(rule, decision="allow", justification=rule.contained)


def _path_words(simple: Simple) -> Iterator[str]:
    """Every word of ``simple`` that :class:`Facts` may classify as a path."""
    for word in simple.argv[1:]:
        yield word
        if "=" in word:
            yield word.split("=", 1)[1]
        if word[:1] == "@":
            yield word[1:]
    for _, target in simple.redirects:
        yield target


def strictest(findings: Iterable[Finding]) -> str:
    """The decision of a command: the strictest of its findings' (``allow`` when none)."""
    return max((f.decision for f in findings), key=_RANK.__getitem__, default="allow")
