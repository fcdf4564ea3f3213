"""What is known about one plugin written for the Hermes agent before it is imported: its
manifest (``plugin.yaml`` for a folder plugin, the distribution's metadata for a pip one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS: tuple[str, ...] = ("standalone", "backend", "exclusive", "platform", "model-provider")
"""The plugin kinds the Hermes agent knows; ``standalone`` is the default."""


@dataclass
class HermesManifest:
    """The manifest of one Hermes agent plugin, as ``ctx.manifest`` shows it to the plugin.

    :param name: the manifest name (the entry point name for a pip plugin).
    :param key: the name users enable it with: the folder path below ``plugins/`` for a folder
        plugin (``name`` or ``category/name``), the entry point name for a pip plugin.
    :param source: ``user`` (a folder in ``$HERMES_HOME/plugins``) or ``entrypoint``.
    :param path: the plugin folder, or the entry point value (``module:attr``).
    :param dist: the distribution that declared the entry point.
    """

    name: str
    key: str = ""
    version: str = ""
    description: str = ""
    author: str = ""
    kind: str = "standalone"
    source: str = "user"
    path: str = ""
    dist: str = ""
    requires_env: list[Any] = field(default_factory=list)
    provides_tools: list[str] = field(default_factory=list)
    provides_hooks: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def plugin_id(self) -> str:
        """The registry id of the plugin (its key)."""
        return self.key or self.name

    @property
    def skill_namespace(self) -> str:
        """The prefix of the skills the plugin registers (``<namespace>:<skill>``)."""
        return self.name

    @property
    def where(self) -> str:
        """Where the plugin came from, for listings."""
        if self.source == "entrypoint":
            return f"entry point of dist {self.dist}" if self.dist else "entry point"
        return f"folder {self.path}"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int | float)]
    return []


def read_manifest_file(manifest_file: Path, key: str) -> HermesManifest:
    """Parse a folder plugin's ``plugin.yaml``; raise ``ValueError`` with a readable reason when
    it is not a mapping. Unknown fields are kept in ``raw`` and otherwise ignored."""
    import yaml

    try:
        data = yaml.safe_load(manifest_file.read_text(encoding="utf-8-sig")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{manifest_file.name} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{manifest_file.name} is not a mapping")
    kind = str(data.get("kind") or "standalone")
    author = data.get("author")
    if isinstance(author, dict):
        author = ", ".join(str(author[k]) for k in ("name", "email", "url") if author.get(k))
    hooks = data.get("provides_hooks", data.get("hooks"))
    return HermesManifest(
        name=str(data.get("name") or manifest_file.parent.name),
        key=key,
        version=str(data.get("version") or ""),
        description=str(data.get("description") or "").strip(),
        author=str(author or ""),
        kind=kind,
        source="user",
        path=str(manifest_file.parent),
        requires_env=list(data.get("requires_env") or []),
        provides_tools=_strings(data.get("provides_tools")),
        provides_hooks=_strings(hooks),
        raw=dict(data),
    )


def profile_name(home: Path) -> str:
    """The Hermes agent's profile name of a home folder: ``default`` for ``~/.hermes``, the
    folder name for ``<home>/profiles/<name>``, ``custom`` for any other folder."""
    home = Path(home).expanduser()
    try:
        if home.resolve() == (Path.home() / ".hermes").resolve():
            return "default"
    except OSError:
        pass
    if home.parent.name == "profiles":
        return home.name
    return "custom"
