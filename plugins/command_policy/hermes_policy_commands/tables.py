"""The tables of ``tables.toml`` (path classes, the front ends' calls), read once."""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any

__all__ = ["TABLES"]

TABLES: dict[str, Any] = tomllib.loads(
    (resources.files(__package__) / "tables.toml").read_text("utf-8")
)
