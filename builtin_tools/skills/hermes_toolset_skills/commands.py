"""``hermes skills list | show``."""

from __future__ import annotations

from pathlib import Path

import click

DESCRIPTION_WIDTH = 70


def _root() -> Path:
    """The skills folder of the active home: the CLI's (``CommandContext.home``, ``-p`` profiles
    included), else the default one."""
    from hermes_runtime.home import default_home

    from .catalog import skills_root

    home = getattr(click.get_current_context().find_root().obj, "home", None)
    return skills_root(Path(home) if home else default_home())


def _where(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


@click.group("skills")
def skills_group() -> None:
    """Skills the agent can load: $HERMES_HOME/skills/[CATEGORY/]NAME/SKILL.md."""


@skills_group.command("list")
@click.option("--category", help="Only the skills of this category.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_skills(category: str | None, as_json: bool) -> None:
    """List skills, with a warning for each malformed one (skipped) or odd one."""
    from .catalog import scan

    root = _root()
    every = [s for s in scan(root) if not category or s.category == category]
    usable = [s for s in every if s.ok]
    if as_json:
        rows = [
            {
                "name": s.name,
                "category": s.category,
                "description": s.description,
                "path": str(s.path),
                "platforms": s.platforms,
                "status": "ok" if s.ok else "skipped",
                "problems": ([s.error] if s.error else []) + s.warnings,
            }
            for s in every
        ]
        import json

        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    if usable:
        table = [["NAME", "CATEGORY", "DESCRIPTION"]]
        for s in usable:
            description = s.description
            if not s.for_this_platform():
                description = f"[{', '.join(s.platforms or [])} only] {description}"
            if len(description) > DESCRIPTION_WIDTH:
                description = description[: DESCRIPTION_WIDTH - 1] + "…"
            table.append([s.name, s.category or "-", description])
        widths = [max(len(r[i]) for r in table) for i in range(3)]
        for row in table:
            click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    noun = "skill" if len(usable) == 1 else "skills"
    scope = f" in category {category!r}" if category else ""
    if usable:
        click.echo(f"{len(usable)} {noun}{scope} in {root}")
    elif every or root.is_dir():
        click.echo(f"No usable skills{scope} in {root}.")
    else:
        click.echo(
            f"No skills yet: {root} does not exist. A skill is a folder holding a SKILL.md "
            "(front matter with name and description, then instructions)."
        )
    for s in every:
        where = _where(s.path, root)
        if s.error:
            click.echo(f"warning: {where}: {s.error} (skipped)", err=True)
        for warning in s.warnings:
            click.echo(f"warning: {where}: {warning}", err=True)


@skills_group.command("show")
@click.argument("name")
@click.option("--file", "file", help="A file of the skill instead of SKILL.md.")
def show(name: str, file: str | None) -> None:
    """Print a skill's SKILL.md (or one of its files) and list its files."""
    from .catalog import SKILL_FILE, SkillError, find, inside, list_files, scan

    root = _root()
    try:
        skill = find(scan(root), name)
        path = inside(skill.folder, file) if file else skill.path
        text = path.read_text(encoding="utf-8")
    except SkillError as exc:
        raise click.ClickException(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"cannot read {file or SKILL_FILE}: {exc}") from None
    click.echo(text.rstrip("\n"))
    if not file:
        files = list_files(skill.folder)
        if files:
            click.echo(f"\nFiles: {', '.join(files)}", err=True)
        if skill.error:
            click.echo(f"warning: {skill.error} (the agent skips this skill)", err=True)
