"""The default values of the ``checkpoints.*`` keys, in one place (plain constants: this module
is imported while ``hermes --help`` starts)."""

from __future__ import annotations

ENABLED = True
"""``checkpoints.enabled``: take checkpoints."""

KEEP = 50
"""``checkpoints.keep``: the checkpoints kept per workspace."""

MAX_AGE_DAYS = 30.0
"""``checkpoints.max_age_days``: checkpoints older than this are dropped."""

MAX_TOTAL_MB = 1024.0
"""``checkpoints.max_total_mb``: the most the whole store may take on disk."""

MAX_FILE_MB = 10.0
"""``checkpoints.max_file_mb``: files larger than this are skipped (never stored, never deleted)."""

EXCLUDE: tuple[str, ...] = (
    "node_modules/",
    ".venv/",
    "venv/",
    "__pycache__/",
    "*.pyc",
    ".tox/",
    ".nox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
)
"""``checkpoints.exclude``: paths never recorded (git's ignore-pattern syntax): caches and
environments a command rebuilds. The workspace's own ``.gitignore`` is *not* read: an ignored
``.env`` or data file is exactly what an undo must bring back."""

READ_ONLY_TOOLS: frozenset[str] = frozenset(
    {
        "read_file",
        "search_files",
        "memory",
        "todo",
        "session_search",
        "skills_list",
        "skill_view",
        "skill_manage",
        "web_search",
        "web_extract",
        "clarify",
        "cronjob",
        "browser_snapshot",
        "browser_get_images",
    }
)
"""Tools known not to change the workspace: a call of one of them takes no checkpoint. Every
other tool, a tool of a plugin included, may change it (fail closed). ``memory``, the skills,
``todo`` and ``cronjob`` write to the hermes home, not the workspace. ``delegate_task`` is not
read-only: its subagents change the workspace during the call, under the parent turn's
checkpoint."""
