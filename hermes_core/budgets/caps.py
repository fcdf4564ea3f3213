"""The spend caps of one run, read from ``budgets`` in config.yaml.

.. code-block:: yaml

    budgets:
      session_usd: 2.00             # each session
      person_day_usd: 10.00         # each person a day, the owner (chat) included
      gateway_user_day_usd: 1.00    # each gateway user (a person) a day
      cron_job_day_usd: 0.50        # each scheduled job a day
      people: {alice: {day_usd: 5}} # one person's own daily cap
      cron_jobs: {a1b2c3: {day_usd: 2}}
      session_tokens: 2000000       # the same caps in tokens, for models with no price
      person_day_tokens: 10000000
      reserve_output_tokens: 1024   # what the check assumes an answer may cost
      downshift_to: {model: gpt-4o-mini, at: 0.8}

A day starts at local midnight. Every cap is optional; with none set, nothing is checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hermes_hookspecs import HermesError

Scope = Literal["session", "person_day", "job_day"]
"""What a cap counts: the session's spend, the person's today, or the job's today."""


class BudgetExhausted(HermesError):
    """A model call could take a run past a spend cap; the message names the cap, what was
    spent and how to raise it."""

    def __init__(self, message: str, cap: Cap) -> None:
        super().__init__(message)
        self.cap = cap


@dataclass(frozen=True)
class Cap:
    """One cap that applies to a run.

    :param key: the dotted configuration key that sets it (named in the message).
    :param scope: what it counts.
    :param usd: the limit in dollars (priced calls), if any.
    :param tokens: the limit in tokens (calls to models with no price), if any.
    :param what: how the message names what it counts ("this session", "alice today").
    """

    key: str
    scope: Scope
    usd: float | None
    tokens: int | None
    what: str


@dataclass(frozen=True)
class Downshift:
    """Use ``model`` (same provider) once a cap is ``at`` (a fraction) spent."""

    model: str
    at: float


def _number(value: Any, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise HermesError(f"{key} must be a number of at least 0, not {value!r}")
    return float(value)


def _cap(
    section: Mapping[str, Any], usd_key: str, tokens_key: str, prefix: str, scope: Scope, what: str
) -> Cap | None:
    usd = _number(section.get(usd_key), f"{prefix}.{usd_key}")
    tokens = _number(section.get(tokens_key), f"{prefix}.{tokens_key}")
    if usd is None and tokens is None:
        return None
    key = f"{prefix}.{usd_key if usd is not None else tokens_key}"
    return Cap(key, scope, usd, None if tokens is None else int(tokens), what)


def _entry(section: Mapping[str, Any], name: str, item: str | None) -> Mapping[str, Any]:
    entries = section.get(name) or {}
    if not isinstance(entries, Mapping):
        raise HermesError(f"budgets.{name} must be a mapping")
    entry = entries.get(item) if item is not None else None
    return entry if isinstance(entry, Mapping) else {}


def caps_for(
    config: Mapping[str, Any], *, person: str | None, job: str | None
) -> tuple[list[Cap], Downshift | None, int]:
    """The caps that apply to a run for ``person`` (``None``: the owner) of ``job`` (a
    scheduled job's id, or ``None``), the downshift, and the output tokens a check reserves.

    :raises HermesError: a cap that is not a number, in one line.
    """
    section = config.get("budgets") or {}
    if not isinstance(section, Mapping):
        raise HermesError("budgets must be a mapping")
    caps: list[Cap] = []
    found = _cap(section, "session_usd", "session_tokens", "budgets", "session", "this session")
    if found:
        caps.append(found)
    who = "you" if person is None else person
    own = _entry(section, "people", person)
    found = _cap(own, "day_usd", "day_tokens", f"budgets.people.{person}", "person_day", who)
    if found is None:
        found = _cap(section, "person_day_usd", "person_day_tokens", "budgets", "person_day", who)
    if found:
        caps.append(found)
    if person is not None and not own:
        found = _cap(
            section, "gateway_user_day_usd", "gateway_user_day_tokens", "budgets", "person_day", who
        )
        if found:
            caps.append(found)
    if job is not None:
        what = f"scheduled job {job}"
        found = _cap(
            _entry(section, "cron_jobs", job),
            "day_usd",
            "day_tokens",
            f"budgets.cron_jobs.{job}",
            "job_day",
            what,
        ) or _cap(section, "cron_job_day_usd", "cron_job_day_tokens", "budgets", "job_day", what)
        if found:
            caps.append(found)
    downshift = None
    shift = section.get("downshift_to")
    if isinstance(shift, str):
        shift = {"model": shift}
    if isinstance(shift, Mapping) and shift.get("model"):
        at = _number(shift.get("at", 0.8), "budgets.downshift_to.at")
        downshift = Downshift(str(shift["model"]), min(1.0, at if at is not None else 0.8))
    reserve = _number(section.get("reserve_output_tokens", 1024), "budgets.reserve_output_tokens")
    return caps, downshift, int(reserve or 0)
