"""The configuration keys the compressor engine reads (``compression.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``compression.*``; the engine's own table (``engine.DEFAULTS``) has the same
    defaults for the keys left unset here."""
    number = "number"
    register(
        ConfigSection(
            "compression",
            [
                ConfigKey("enabled", "boolean", True, "shrink long conversations automatically"),
                ConfigKey(
                    "threshold",
                    number,
                    0.5,
                    "share of the context window that triggers compression",
                    minimum=0,
                    exclusive_minimum=True,
                    maximum=1,
                ),
                ConfigKey(
                    "protect_first_n", "integer", 3, "leading messages never compressed", minimum=0
                ),
                ConfigKey(
                    "protect_last_n", "integer", 20, "trailing messages never compressed", minimum=0
                ),
                ConfigKey(
                    "protect_last_tokens",
                    ("integer", "null"),
                    doc="trailing tokens never compressed (replaces protect_last_n)",
                    minimum=1,
                ),
                ConfigKey(
                    "prune_min_chars",
                    "integer",
                    doc="old tool results longer than this are pruned first (unset: 400)",
                    minimum=0,
                ),
                ConfigKey(
                    "summary_max_tokens",
                    "integer",
                    doc="longest summary, in tokens (unset: 4096)",
                    minimum=256,
                ),
                ConfigKey(
                    "summary_input_chars",
                    "integer",
                    doc="most characters sent to be summarised (unset: 120000)",
                    minimum=1000,
                ),
                ConfigKey(
                    "summary_cooldown_seconds",
                    number,
                    doc="seconds without summaries after one failed (unset: 600)",
                    minimum=0,
                ),
                ConfigKey(
                    "min_savings",
                    number,
                    doc="least share a compaction must save to count (unset: 0.1)",
                    minimum=0,
                    maximum=1,
                ),
            ],
            doc="the compressor context engine",
        )
    )
