"""Which toolsets a row gets: the ones always on, plus each sampled toolset with its own
probability, drawn from a seed made of the run's seed and the row's id, so that the same run
with the same seed gives every row the same toolsets whatever order rows run in."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_hookspecs import HermesError


def row_seed(run_seed: int, key: str) -> int:
    """The seed of row ``key`` in a run seeded ``run_seed`` (63 bits, stable across machines
    and Python versions)."""
    digest = hashlib.sha256(f"{run_seed}\0{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def parse_probabilities(values: Sequence[str]) -> dict[str, float]:
    """``NAME=P`` pairs (``--toolset-prob web=0.5``) as a mapping; a one-line
    :class:`HermesError` for a malformed pair or a probability outside [0, 1]."""
    found: dict[str, float] = {}
    for value in values:
        name, sep, number = value.partition("=")
        try:
            probability = float(number)
        except ValueError:
            probability = -1.0
        if not sep or not name.strip() or not 0.0 <= probability <= 1.0:
            raise HermesError(
                f"--toolset-prob {value!r}: write NAME=P with P between 0 and 1 (web=0.5)"
            )
        found[name.strip()] = probability
    return found


def sample_toolsets(
    settings: Mapping[str, Any], key: str, row_toolsets: Sequence[str] | None = None
) -> tuple[list[str] | None, int]:
    """The toolsets of row ``key`` and the seed they were drawn with.

    A row that names its own ``toolsets`` gets those. Otherwise: the run's ``toolsets`` (always
    on) plus every toolset of ``toolset_probs`` drawn on with its probability, independently;
    when that leaves none at all, one of the sampled toolsets is drawn (each as likely as its
    probability says). ``None`` (no toolsets named anywhere): the configured ones.
    """
    seed = row_seed(int(settings.get("seed") or 0), key)
    if row_toolsets is not None:
        return sorted(set(row_toolsets)), seed
    always = list(settings.get("toolsets") or [])
    probs: Mapping[str, float] = settings.get("toolset_probs") or {}
    if not probs:
        return (sorted(set(always)) if always else None), seed
    rng = random.Random(seed)
    chosen = [name for name in sorted(probs) if rng.random() < probs[name]]
    if not chosen and not always:
        names = sorted(probs)
        weights = [probs[n] for n in names]
        chosen = [rng.choices(names, weights=weights if any(weights) else None)[0]]
    return sorted(set(always) | set(chosen)), seed
