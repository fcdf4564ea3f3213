"""The default prompt layers of hermes, one plugin module per layer.

Each module is its own entry point in group ``hermes``, so a user can disable one
(``plugins.disabled: [prompt_platform]``) and a third-party plugin can replace one by returning a
layer of the same name:

- ``prompt_identity``: layer ``identity`` (stable, order 0), ``SOUL.md`` or a default identity;
- ``prompt_environment``: layer ``environment`` (stable, 900), OS, shell, cwd, Python, backend;
- ``prompt_platform``: layer ``platform`` (stable, 910), how to write for cli, cron or a gateway;
- ``prompt_project_context``: layer ``project_context`` (context, 50), ``.hermes.md``,
  ``HERMES.md``, ``AGENTS.md``, ``CLAUDE.md`` or ``.cursorrules``;
- ``prompt_session_facts``: layer ``session_facts`` (volatile, 1000), start date, model, provider.

Every layer is a pure function of its :class:`~hermes_hookspecs.PromptContext`, the process
environment and the files on disk: the same inputs give the same bytes, and no layer starts a
subprocess.
"""

from __future__ import annotations

DEFAULT_MAX_CHARS = 20_000
"""Files longer than this (``SOUL.md``, the project context file) keep their head and tail."""

__all__ = ["DEFAULT_MAX_CHARS"]
