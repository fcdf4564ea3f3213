"""Finding, reading and checking skills; safe paths inside a skill folder.

A skill is ``<skills>/[<category>/]<name>/SKILL.md``: YAML front matter (``name``,
``description``, optional ``metadata`` and ``platforms``) then a markdown body, with optional files
beside it (the Agent Skills convention). Folders whose name starts with ``.`` are ignored.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from hermes_hookspecs import ToolError

log = logging.getLogger("hermes.skills")

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024

PLATFORM_ALIASES: dict[str, str] = {
    "macos": "macos",
    "darwin": "macos",
    "osx": "macos",
    "linux": "linux",
    "windows": "windows",
    "win32": "windows",
}


class SkillError(ToolError):
    """A request about skills that cannot be carried out; the message is for the model (a tool
    raising it reports ``Error: <message>``)."""


# --- locations ------------------------------------------------------------------------------


def skills_root(home: Path) -> Path:
    """``<home>/skills``."""
    return Path(home) / "skills"


def current_platform() -> str:
    """``macos``, ``linux``, ``windows`` or ``sys.platform`` itself."""
    if sys.platform.startswith("linux"):
        return "linux"
    return PLATFORM_ALIASES.get(
        sys.platform, "windows" if sys.platform == "cygwin" else sys.platform
    )


# --- front matter -----------------------------------------------------------------------------


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter (parsed) and the body of a SKILL.md; a :class:`SkillError` saying what is
    wrong otherwise."""
    import yaml  # imported here: loading the plugin must stay cheap

    text = text.lstrip("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillError("no YAML front matter (the file must start with a line '---')")
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        raise SkillError("the front matter is not closed by a line '---'")
    try:
        data = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SkillError(f"invalid YAML in the front matter{where}: {problem}") from None
    if not isinstance(data, dict):
        raise SkillError(
            "the front matter must be a mapping of fields (name: ..., description: ...)"
        )
    return data, "".join(lines[end + 1 :])


def check_name(name: Any, what: str = "name") -> str:
    """``name`` if it is a valid skill (or category) name, else a :class:`SkillError`."""
    if not isinstance(name, str) or not name:
        raise SkillError(f"{what} is missing")
    if len(name) > MAX_NAME:
        raise SkillError(f"{what} {name[:20]!r}... is {len(name)} characters; at most {MAX_NAME}")
    if not NAME_RE.match(name):
        raise SkillError(
            f"{what} {name!r} is not valid: use lowercase letters, digits and single hyphens "
            "(e.g. 'deploy-k8s')"
        )
    return name


def front_matter_problems(data: Mapping[str, Any], folder_name: str) -> tuple[list[str], list[str]]:
    """``(errors, warnings)`` of a parsed front matter for the skill in ``folder_name``.

    Errors make a skill unusable (no description). Warnings break the convention but leave the
    skill usable when it is loaded; :func:`validate_content` treats both as errors.
    """
    errors: list[str] = []
    warnings: list[str] = []
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        errors.append("the front matter has no description")
    elif len(description) > MAX_DESCRIPTION:
        warnings.append(
            f"the description is {len(description):,} characters; at most {MAX_DESCRIPTION:,}"
        )
    name = data.get("name")
    if name is None:
        warnings.append(f"the front matter has no name (expected name: {folder_name})")
    elif name != folder_name:
        warnings.append(f"the front matter name {name!r} does not match the folder {folder_name!r}")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        warnings.append("metadata must be a mapping")
    platforms = data.get("platforms")
    if platforms is not None:
        values = [platforms] if isinstance(platforms, str) else platforms
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            warnings.append("platforms must be a list such as [linux, macos]")
        else:
            unknown = [v for v in values if v.lower() not in PLATFORM_ALIASES]
            if unknown:
                warnings.append(
                    f"unknown platform(s) {', '.join(unknown)} (known: linux, macos, windows)"
                )
    return errors, warnings


def validate_content(content: str, name: str) -> None:
    """Refuse a SKILL.md for skill ``name`` that breaks the convention in any way."""
    if not content.strip():
        raise SkillError("content is empty; give the whole SKILL.md")
    try:
        data, body = split_front_matter(content)
    except SkillError as exc:
        raise SkillError(f"{exc}. Start SKILL.md with:\n{example_front_matter(name)}") from None
    errors, warnings = front_matter_problems(data, name)
    if data.get("name") is not None and not isinstance(data.get("name"), str):
        errors.append("name must be a string")
    problems = errors + warnings
    if problems:
        raise SkillError(
            "SKILL.md is not valid: " + "; ".join(problems) + f". Expected:\n"
            f"{example_front_matter(name)}"
        )
    if not body.strip():
        raise SkillError("SKILL.md has no body: write the instructions after the front matter")


def example_front_matter(name: str) -> str:
    """The front matter of a SKILL.md named ``name``, as the error messages show it."""
    return f"---\nname: {name}\ndescription: What the skill does and when to use it.\n---"


# --- discovery --------------------------------------------------------------------------------


@dataclass
class Skill:
    """One skill folder, usable or not."""

    name: str
    category: str | None
    folder: Path
    description: str = ""
    front_matter: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    shared: bool = False
    """One of the home's shared skills, seen by a person: they may read it, not change it."""

    @property
    def ref(self) -> str:
        """``category/name`` or ``name``."""
        return f"{self.category}/{self.name}" if self.category else self.name

    @property
    def path(self) -> Path:
        """Its SKILL.md."""
        return self.folder / SKILL_FILE

    @property
    def ok(self) -> bool:
        """Usable: listed, indexed and viewable."""
        return self.error is None

    @property
    def platforms(self) -> list[str] | None:
        """The platforms it is meant for (normalised), or ``None`` for all."""
        value = self.front_matter.get("platforms")
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not values:
            return None
        known = [PLATFORM_ALIASES.get(str(v).lower()) for v in values]
        return sorted({v for v in known if v}) or None

    def for_this_platform(self) -> bool:
        """Whether it applies to the operating system hermes runs on."""
        platforms = self.platforms
        return platforms is None or current_platform() in platforms


def load_skill(folder: Path, category: str | None) -> Skill:
    """Read one skill folder; problems are recorded on the result, never raised."""
    skill = Skill(name=folder.name, category=category, folder=folder)
    try:
        text = skill.path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        skill.error = "SKILL.md is not valid UTF-8"
        return skill
    except OSError as exc:
        skill.error = f"cannot read SKILL.md: {exc.strerror or exc}"
        return skill
    try:
        data, _body = split_front_matter(text)
    except SkillError as exc:
        skill.error = str(exc)
        return skill
    errors, warnings = front_matter_problems(data, folder.name)
    skill.front_matter = data
    skill.warnings = warnings
    if errors:
        skill.error = "; ".join(errors)
        return skill
    skill.description = " ".join(str(data["description"]).split())
    if not NAME_RE.match(folder.name) or len(folder.name) > MAX_NAME:
        skill.warnings.append(
            f"the folder name {folder.name!r} is not a valid skill name (lowercase letters, "
            "digits and hyphens)"
        )
    return skill


def scan(root: Path) -> list[Skill]:
    """Every skill folder under ``root``, sorted by ``category/name``. Never raises for a bad
    skill: its problem is recorded on it."""
    found: list[Skill] = []
    for entry in _subfolders(root):
        if (entry / SKILL_FILE).is_file():
            found.append(load_skill(entry, None))
            continue
        for sub in _subfolders(entry):
            if (sub / SKILL_FILE).is_file():
                found.append(load_skill(sub, entry.name))
    found.sort(key=lambda s: (s.category or "", s.name))
    return found


def _subfolders(folder: Path) -> list[Path]:
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    return [e for e in entries if not e.name.startswith(".") and e.is_dir()]


def log_problems(skills: list[Skill], root: Path) -> None:
    """Log a warning for every skipped skill and every convention a loaded one breaks."""
    for skill in skills:
        where = skill.path.relative_to(root) if skill.path.is_relative_to(root) else skill.path
        if skill.error:
            log.warning("skill %s skipped: %s", where, skill.error)
        for warning in skill.warnings:
            log.warning("skill %s: %s", where, warning)


def find(skills: list[Skill], ref: Any) -> Skill:
    """The skill named ``ref`` (``name`` or ``category/name``), usable or not."""
    ref = str(ref or "").strip().strip("/")
    if not ref:
        raise SkillError("name is empty; give a skill name (see skills_list)")
    category, _, name = ref.rpartition("/")
    matches = [s for s in skills if s.name == name and (not category or s.category == category)]
    if not matches:
        near = [s.ref for s in skills if s.ok and (name in s.name or s.name in name)]
        hint = f" Similar: {', '.join(near[:5])}." if near else " Use skills_list to see them."
        raise SkillError(f"no skill named {ref!r}.{hint}")
    if len(matches) > 1:
        raise SkillError(
            f"{ref!r} is ambiguous: {', '.join(s.ref for s in matches)}; use category/name"
        )
    return matches[0]


# --- files inside a skill --------------------------------------------------------------------


def inside(folder: Path, file: Any) -> Path:
    """The path of ``file`` inside the skill ``folder``; refuses absolute paths, ``..`` and
    symbolic links that lead out of the folder."""
    raw = str(file or "").strip()
    if not raw:
        raise SkillError("file is empty; give a path relative to the skill folder")
    if "\x00" in raw:
        raise SkillError("file contains a NUL character")
    posix = raw.replace("\\", "/")
    if posix.startswith(("/", "~")) or PureWindowsPath(raw).drive:
        raise SkillError(f"{raw!r} is an absolute path; give a path relative to the skill folder")
    relative = PurePosixPath(posix)
    if ".." in relative.parts:
        raise SkillError(
            f"{raw!r} goes up with '..'; only paths inside the skill folder are allowed"
        )
    target = folder.joinpath(*relative.parts)
    base = folder.resolve()
    resolved = target.resolve()
    if resolved != base and not resolved.is_relative_to(base):
        raise SkillError(f"{raw!r} leads outside the skill folder through a symbolic link")
    return target


def list_files(folder: Path, limit: int = 100) -> list[str]:
    """The files of a skill besides SKILL.md, relative, sorted; hidden ones and symbolic links
    leading out of the folder are left out."""
    base = folder.resolve()
    files: list[str] = []
    for current, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = Path(current) / name
            relative = path.relative_to(folder).as_posix()
            if relative == SKILL_FILE:
                continue
            if not path.resolve().is_relative_to(base):
                continue
            files.append(relative)
    return sorted(files)[:limit]


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(OSError):
            os.chmod(tmp_name, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
