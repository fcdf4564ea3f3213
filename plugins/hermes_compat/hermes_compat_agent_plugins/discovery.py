"""Finding Hermes agent plugins (folders in ``$HERMES_HOME/plugins`` and pip distributions in the
``hermes_agent.plugins`` entry point group) and deciding which of them load, by the Hermes
agent's own rules: plugins are opt-in through ``plugins.enabled``, ``plugins.disabled`` wins."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .manifest import KINDS, HermesManifest, read_manifest_file

ENTRY_POINT_GROUP = "hermes_agent.plugins"
MANIFEST_FILES = ("plugin.yaml", "plugin.yml")


@dataclass(frozen=True)
class Found:
    """A plugin found on disk, or a folder that looked like one but could not be read."""

    manifest: HermesManifest
    error: str = ""


def scan_folder(root: Path) -> list[Found]:
    """Folder plugins below ``root``: ``<root>/<name>/plugin.yaml`` (key ``name``), or one level
    deeper in a category folder without a manifest (key ``category/name``)."""
    found: list[Found] = []

    def visit(folder: Path, prefix: str, depth: int) -> None:
        try:
            children = sorted(p for p in folder.iterdir() if p.is_dir())
        except OSError:
            return
        for child in children:
            if child.name.startswith((".", "__")):
                continue
            key = f"{prefix}/{child.name}" if prefix else child.name
            manifest_file = next((child / m for m in MANIFEST_FILES if (child / m).is_file()), None)
            if manifest_file is None:
                if depth == 0:
                    visit(child, key, 1)
                continue
            try:
                found.append(Found(read_manifest_file(manifest_file, key)))
            except ValueError as exc:
                found.append(
                    Found(HermesManifest(name=child.name, key=key, path=str(child)), str(exc))
                )

    if root.is_dir():
        visit(root, "", 0)
    return found


def _module_source(module_name: str, limit: int = 8192) -> str:
    """The first characters of a module's source, found without importing it ("" if unknown)."""
    top, _, rest = module_name.partition(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return ""
    if spec is None or not spec.origin:
        return ""
    path = Path(spec.origin)
    for part in filter(None, rest.split(".")):
        base = path.parent
        path = base / part / "__init__.py" if (base / part).is_dir() else base / f"{part}.py"
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:limit]
    except OSError:
        return ""


def kind_from_source(text: str) -> str:
    """The kind the Hermes agent infers for a pip plugin from its source, without importing it:
    a memory provider is ``exclusive``, a model provider profile ``model-provider``."""
    if "register_memory_provider" in text or "MemoryProvider" in text:
        return "exclusive"
    if "register_provider" in text and "ProviderProfile" in text:
        return "model-provider"
    return "standalone"


def scan_entry_points() -> list[Found]:
    """Pip plugins: every entry point of group ``hermes_agent.plugins``. The installed
    distributions are read once per process, by the same reader as hermes's own entry points."""
    from hermes_runtime.entry_points import scan

    found: list[Found] = []
    for ep in sorted(scan(ENTRY_POINT_GROUP), key=lambda e: e.name):
        meta = ep.metadata()
        module = ep.value.partition(":")[0].strip()
        manifest = HermesManifest(
            name=ep.name,
            key=ep.name,
            version=ep.version,
            description=meta.get("Summary", ""),
            author=meta.get("Author", ""),
            kind=kind_from_source(_module_source(module)),
            source="entrypoint",
            path=ep.value,
            dist=ep.dist,
        )
        found.append(Found(manifest))
    return found


@dataclass(frozen=True)
class Verdict:
    """Whether a plugin loads; when it does not, its status and the reason shown to the user."""

    load: bool
    status: str = "loaded"
    reason: str = ""


def gate(
    manifest: HermesManifest, enabled: Iterable[str] | None, disabled: Iterable[str]
) -> Verdict:
    """Decide, by the Hermes agent's rules, whether ``manifest`` loads: ``plugins.disabled`` wins;
    memory providers, model providers and gateway platforms have no place here; anything else
    loads only when ``plugins.enabled`` names it (by key or manifest name)."""
    names = {manifest.plugin_id, manifest.name}
    if names & set(disabled):
        return Verdict(False, "disabled", "disabled in plugins.disabled")
    if manifest.kind not in KINDS:
        return Verdict(False, "skipped", f"unknown plugin kind {manifest.kind!r}")
    if manifest.kind == "exclusive":
        return Verdict(
            False,
            "skipped",
            "a memory provider (kind exclusive): hermes has its own memory toolset, "
            "memory providers are not loaded",
        )
    if manifest.kind == "model-provider":
        return Verdict(
            False,
            "skipped",
            "a model provider profile: hermes providers are hermes plugins "
            "(hermes_register_providers), this one is not loaded",
        )
    if not enabled or not names & set(enabled):
        return Verdict(
            False,
            "skipped",
            f"not enabled (add {manifest.plugin_id!r} to plugins.enabled in config.yaml)",
        )
    if manifest.kind == "platform":
        return Verdict(
            False,
            "skipped",
            "a gateway platform adapter written against the Hermes agent's gateway classes; "
            "hermes gateway adapters are hermes plugins (hermes_register_platform_adapters), "
            "so it is not loaded",
        )
    return Verdict(True)
