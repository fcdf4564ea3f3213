"""What a plugin reports about plugins it loads for another plugin system (e.g. a compatibility
loader), so that ``hermes plugins list`` can show each of them."""

from __future__ import annotations

from dataclasses import dataclass, field

REPORT_STATUSES: tuple[str, ...] = ("loaded", "error", "disabled", "skipped")
"""The values of :attr:`PluginReport.status`."""


@dataclass
class PluginReport:
    """One plugin loaded (or not) by another plugin on its own terms.

    :param name: the name the user knows it by (the key they enable it with).
    :param version: its version, when known.
    :param source: where it came from, e.g. ``"entry point of dist acme-guard"`` or a folder.
    :param status: ``loaded``, ``error`` (it failed to load), ``disabled`` (the user turned it
        off) or ``skipped`` (not enabled, or of a kind that cannot run here).
    :param provides: what it added, one short item each (``"tool sfw"``, ``"hook pre_tool_call"``).
    :param notes: what of it does not work here and why, one line each (e.g. a hook with no
        equivalent); shown to the user, never a crash.
    :param error: why it failed to load or was skipped, one line.
    :param opt_in: the dotted config key of the list that must name it for it to load (e.g.
        ``plugins.enabled``), or empty when it loads unless ``plugins.disabled`` names it.
        ``hermes plugins enable`` adds its name to that list; ``disable`` removes it.
    """

    name: str
    version: str = ""
    source: str = ""
    status: str = "loaded"
    provides: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str = ""
    opt_in: str = ""

    def as_dict(self) -> dict[str, object]:
        """A JSON-friendly view of the report."""
        return {
            "name": self.name,
            "version": self.version,
            "source": self.source,
            "status": self.status,
            "provides": list(self.provides),
            "notes": list(self.notes),
            "error": self.error,
        }


__all__ = ["REPORT_STATUSES", "PluginReport"]
