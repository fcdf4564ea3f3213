"""The handlers of ``skills_list``, ``skill_view`` and ``skill_manage``."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

from hermes_hookspecs import ToolContext
from hermes_runtime.home import default_home

from .catalog import (
    SKILL_FILE,
    Skill,
    SkillError,
    atomic_write,
    check_name,
    find,
    inside,
    list_files,
    scan,
    validate_content,
)
from .scope import SkillRoots, roots_for

NEXT_SESSION = "The skills index in the system prompt shows the change from the next session."


def roots_of(ctx: ToolContext) -> SkillRoots:
    """The skill folders of a tool call's person (``ctx.person``) in the host's home
    (``ctx.hermes_home``, it knows the active profile), else in the default one
    (``$HERMES_HOME``, else ``~/.hermes``): see :mod:`.scope`."""
    return roots_for(ctx.hermes_home or default_home(), ctx.person)


def _entry(skill: Skill, roots: SkillRoots) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": skill.name,
        "category": skill.category,
        "description": skill.description,
    }
    if roots.person is not None:  # a person sees whose each skill is
        entry["shared"] = skill.shared
    return entry


# --- skills_list ------------------------------------------------------------------------------


def skills_list(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Skills on offer: name, category, description; optionally of one category. A person
    sees the home's shared skills (marked ``shared``) and their own."""
    roots = roots_of(ctx)
    every = roots.scan()
    usable = [s for s in every if s.ok and s.for_this_platform()]
    categories = sorted({s.category for s in usable if s.category})
    category = (args.get("category") or "").strip().strip("/")
    chosen = [s for s in usable if s.category == category] if category else usable
    result: dict[str, Any] = {
        "skills": [_entry(s, roots) for s in chosen],
        "count": len(chosen),
        "categories": categories,
    }
    if category and not chosen:
        result["note"] = f"no skill in category {category!r}"
    elif not usable:
        result["note"] = f"no skills yet in {roots.own}"
    broken = [s for s in every if not s.ok and (not category or s.category == category)]
    if broken:
        result["skipped"] = [
            {"skill": s.ref, "problem": s.error, **({"shared": True} if s.shared else {})}
            for s in broken
        ]
        if any(not s.shared for s in broken):  # a shared skill is not the person's to fix
            result["hint"] = "skipped skills can be fixed with skill_manage (edit or patch)"
    return result


# --- skill_view -------------------------------------------------------------------------------


def skill_view(args: dict[str, Any], ctx: Any) -> str:
    """A skill's SKILL.md with the list of its other files, or one of those files."""
    skill = find(roots_of(ctx).scan(), args["name"])
    file = args.get("file")
    if not file or _is_main(file):
        if not skill.ok and not file:
            raise SkillError(
                f"skill {skill.ref!r} is malformed and was skipped: {skill.error}. "
                f"Fix it with skill_manage (edit) or read it with file={SKILL_FILE!r}."
            )
        text = _read(skill.path, SKILL_FILE)
        files = list_files(skill.folder)
        listing = (
            f"Files: {', '.join(files)} (open one with skill_view and file)"
            if files
            else "Files: none besides SKILL.md"
        )
        return f"Skill {skill.ref} ({skill.folder})\n{listing}\n\n{text}"
    path = inside(skill.folder, file)
    if path.is_dir():
        files = [f for f in list_files(skill.folder) if f.startswith(_rel(skill, path) + "/")]
        raise SkillError(f"{file!r} is a folder of skill {skill.ref!r}; its files: {_join(files)}")
    if not path.exists():
        raise SkillError(
            f"skill {skill.ref!r} has no file {file!r}; its files: "
            f"{_join([SKILL_FILE, *list_files(skill.folder)])}"
        )
    return _read(path, str(file))


def _is_main(file: Any) -> bool:
    return str(file).strip().lstrip("./") == SKILL_FILE


def _rel(skill: Skill, path: Path) -> str:
    return path.relative_to(skill.folder).as_posix()


def _join(files: list[str]) -> str:
    return ", ".join(files) if files else "none"


def _read(path: Path, shown: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SkillError(f"cannot read {shown}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(
            f"{shown} is a binary file ({len(data):,} bytes); it is not shown"
        ) from None


# --- skill_manage -----------------------------------------------------------------------------


def skill_manage(args: dict[str, Any], ctx: Any) -> str:
    """Create, edit, patch or delete a skill, or one file of it. A person writes in their own
    skills folder only: a shared skill is theirs to read, never to change or delete."""
    action = args["action"]
    roots = roots_of(ctx)
    root = roots.own
    file = args.get("file")
    if file and _is_main(file):
        file = None
    if action == "create":
        return _create(roots, args, file)
    skill = roots.writable(find(roots.scan(), args["name"]), action)
    if action == "delete":
        return _delete(root, skill, file)
    if action == "edit":
        content = _content(args)
        if file:
            path = inside(skill.folder, file)
            if not path.is_file():
                raise SkillError(f"skill {skill.ref!r} has no file {file!r}; use action create")
            atomic_write(path, content)
            return f"Updated {file} of skill {skill.ref} ({len(content):,} chars)."
        validate_content(content, skill.name)
        atomic_write(skill.path, content)
        return f"Updated skill {skill.ref} ({len(content):,} chars). {NEXT_SESSION}"
    return _patch(skill, args, file)


def _content(args: dict[str, Any]) -> str:
    content = args.get("content")
    if not isinstance(content, str) or not content.strip():
        raise SkillError(f"action {args['action']!r} needs content: the whole text of the file")
    return content if content.endswith("\n") else content + "\n"


def _create(roots: SkillRoots, args: dict[str, Any], file: Any) -> str:
    root = roots.own
    ref = str(args.get("name") or "").strip().strip("/")
    category = args.get("category") or None
    if "/" in ref:
        category, _, ref = ref.rpartition("/")
    name = check_name(ref)
    if category is not None:
        check_name(category, "category")
    existing = [s for s in scan(root) if s.name == name]
    if file:
        if not existing:
            seen = [s for s in roots.scan() if s.name == name]
            if seen:  # a shared skill: no file may be added to it
                roots.writable(seen[0], "add a file to")
            raise SkillError(f"no skill named {name!r}; create its SKILL.md first (without file)")
        skill = find(existing, f"{category}/{name}" if category else name)
        path = inside(skill.folder, file)
        if path.exists():
            raise SkillError(f"skill {skill.ref!r} already has {file!r}; use action edit or patch")
        content = _content(args)
        atomic_write(path, content)
        return f"Created {file} in skill {skill.ref} ({len(content):,} chars)."
    if existing:
        raise SkillError(
            f"a skill named {name!r} already exists ({existing[0].ref}); use action edit or "
            "patch, or choose another name"
        )
    content = _content(args)
    validate_content(content, name)
    folder = root / category / name if category else root / name
    if folder.exists():
        raise SkillError(f"{folder} already exists and is not a skill; choose another name")
    atomic_write(folder / SKILL_FILE, content)
    ref = f"{category}/{name}" if category else name
    shadowed = ""
    if roots.shared is not None and any(s.name == name for s in scan(roots.shared)):
        shadowed = f" It takes the place of the shared skill {name!r} for you."
    return f"Created skill {ref} in {folder}.{shadowed} {NEXT_SESSION}"


def _patch(skill: Skill, args: dict[str, Any], file: Any) -> str:
    old, new = args.get("old_text"), args.get("new_text")
    if not isinstance(old, str) or not old:
        raise SkillError("action 'patch' needs old_text: the exact text to replace")
    if not isinstance(new, str):
        raise SkillError("action 'patch' needs new_text (it may be empty to delete old_text)")
    path = inside(skill.folder, file) if file else skill.path
    shown = str(file) if file else SKILL_FILE
    if not path.is_file():
        raise SkillError(f"skill {skill.ref!r} has no file {shown!r}")
    text = _read(path, shown)
    count = text.count(old)
    if count == 0:
        raise SkillError(f"old_text was not found in {shown} of skill {skill.ref!r}")
    if count > 1:
        raise SkillError(
            f"old_text occurs {count} times in {shown}; include more of the surrounding text "
            "so that it occurs once"
        )
    patched = text.replace(old, new, 1)
    if not file:
        validate_content(patched, skill.name)
    atomic_write(path, patched)
    tail = f" {NEXT_SESSION}" if not file else ""
    return f"Patched {shown} of skill {skill.ref}.{tail}"


def _delete(root: Path, skill: Skill, file: Any) -> str:
    if file:
        path = inside(skill.folder, file)
        if path.is_dir() and not path.is_symlink():
            raise SkillError(f"{file!r} is a folder; delete its files one by one")
        if not path.exists() and not path.is_symlink():
            raise SkillError(f"skill {skill.ref!r} has no file {file!r}")
        path.unlink()
        return f"Deleted {file} from skill {skill.ref}."
    if skill.folder.is_symlink():
        skill.folder.unlink()  # a linked skill: remove the link, not what it points to
    else:
        shutil.rmtree(skill.folder)
    if skill.category:
        with contextlib.suppress(OSError):
            (root / skill.category).rmdir()  # only when the category is now empty
    return f"Deleted skill {skill.ref}. {NEXT_SESSION}"
