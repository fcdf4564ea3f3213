"""Whose skills a call sees and may change.

The home's owner has one folder, ``<home>/skills``: the skills installed for everyone in the home,
which the owner's agent reads and writes as before. A person a gateway serves sees those shared
skills too, read-only, and keeps the skills their agent writes in their own folder,
``<home>/people/<person>/skills``. Where one of their own skills has the name of a shared one,
theirs takes its place for them (the shared one is hidden from them, nobody else is affected). No
person ever sees another person's skills.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hermes_hookspecs import person_home

from .catalog import Skill, SkillError, scan, skills_root


@dataclass(frozen=True)
class SkillRoots:
    """The skill folders of one caller.

    :param own: where the caller's skills are written (``<home>/skills`` for the owner,
        ``<home>/people/<person>/skills`` for a person).
    :param shared: the home's installed skills, shown read-only to a person; ``None`` for the
        owner, whose own folder they are.
    :param person: the caller's person (``None``: the owner).
    """

    own: Path
    shared: Path | None = None
    person: str | None = None

    def scan(self) -> list[Skill]:
        """Every skill the caller sees, sorted by ``category/name``: their own, then the shared
        ones whose name none of their own has. Shared skills are marked ``shared``."""
        own = scan(self.own)
        if self.shared is None:
            return own
        names = {skill.name for skill in own}
        shared = [s for s in scan(self.shared) if s.name not in names]
        for skill in shared:
            skill.shared = True
        every = own + shared
        every.sort(key=lambda s: (s.category or "", s.name))
        return every

    def writable(self, skill: Skill, action: str) -> Skill:
        """``skill`` when the caller may change it; a :class:`SkillError` saying why not for a
        shared skill seen by a person."""
        if skill.shared:
            raise SkillError(
                f"cannot {action} skill {skill.ref!r}: it is a shared skill installed for "
                "everyone in this home, and you may read it but not change or delete it. To "
                "adapt it, create your own skill with the same name (skill_manage create): it "
                "takes the shared one's place for you only"
            )
        return skill


def roots_for(home: Path, person: str | None) -> SkillRoots:
    """The skill folders of ``person`` (``None``: the owner) in the hermes home ``home``.

    :raises HermesError: ``person`` is not a valid person id.
    """
    own = skills_root(person_home(home, person))
    if person is None:
        return SkillRoots(own=own)
    return SkillRoots(own=own, shared=skills_root(home), person=person)
