"""The configuration keys the checkpoints plugin reads (``checkpoints.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl

from . import defaults


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``checkpoints.*``."""
    register(
        ConfigSection(
            "checkpoints",
            [
                ConfigKey(
                    "enabled",
                    "boolean",
                    defaults.ENABLED,
                    "take a checkpoint of the workspace before each turn's first change",
                ),
                ConfigKey(
                    "keep",
                    "integer",
                    defaults.KEEP,
                    "checkpoints kept per workspace (the oldest go first)",
                    minimum=1,
                ),
                ConfigKey(
                    "max_age_days",
                    "number",
                    defaults.MAX_AGE_DAYS,
                    "checkpoints older than this many days are dropped",
                    minimum=0,
                    exclusive_minimum=True,
                ),
                ConfigKey(
                    "max_total_mb",
                    "number",
                    defaults.MAX_TOTAL_MB,
                    "the most the checkpoint store may take on disk (MiB); the oldest go first",
                    minimum=0,
                    exclusive_minimum=True,
                ),
                ConfigKey(
                    "max_file_mb",
                    "number",
                    defaults.MAX_FILE_MB,
                    "larger files are skipped: never recorded, never deleted by a restore (MiB)",
                    minimum=0,
                    exclusive_minimum=True,
                ),
                ConfigKey(
                    "exclude",
                    "array",
                    list(defaults.EXCLUDE),
                    "paths never recorded (git ignore patterns; the workspace's .gitignore is "
                    "not read)",
                    items="string",
                ),
                ConfigKey(
                    "read_only_tools",
                    "array",
                    [],
                    "more tools that never change the workspace (no checkpoint before them)",
                    items="string",
                ),
            ],
            doc="checkpoints of the workspace, and hermes checkpoints list|diff|restore",
        )
    )
