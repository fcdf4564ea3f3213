"""Schedules: a cron expression, an interval (``every 30m``) or one time (``at ...``, ``in 2h``).

Times are UNIX timestamps; cron expressions are read in the machine's local time zone.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_RE = re.compile(
    r"^\s*(\d+)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?|w|weeks?)\s*$",
    re.I,
)
MIN_INTERVAL = 60
"""The shortest interval accepted, in seconds: a job is an agent turn, not a busy loop."""


class ScheduleError(ValueError):
    """A schedule that cannot be understood; the message is one line saying what is accepted."""


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule.

    :param kind: ``cron``, ``interval`` or ``once``.
    :param text: the schedule as the user wrote it (one-time relative ones are stored absolute).
    :param expression: the cron expression (``cron``).
    :param seconds: the interval (``interval``).
    :param at: the UNIX time of the one run (``once``).
    """

    kind: str
    text: str
    expression: str = ""
    seconds: int = 0
    at: float = 0.0

    def next_after(self, now: float) -> float | None:
        """The first run time strictly after ``now``; ``None`` when a one-time job is past."""
        if self.kind == "interval":
            return now + self.seconds
        if self.kind == "once":
            return self.at if self.at > now else None
        from croniter import croniter

        start = _dt.datetime.fromtimestamp(now).astimezone()
        return float(croniter(self.expression, start).get_next(float))

    def describe(self) -> str:
        """A short human description."""
        if self.kind == "interval":
            return f"every {_duration_text(self.seconds)}"
        if self.kind == "once":
            return "once at " + _dt.datetime.fromtimestamp(self.at).strftime("%Y-%m-%d %H:%M")
        return f"cron {self.expression}"


def parse(text: str, now: float) -> Schedule:
    """Parse ``text``: ``every <n><unit>``, ``in <n><unit>``, ``at <ISO date-time>``, or a cron
    expression of 5 fields (6 with seconds are refused). Units: s, m, h, d, w."""
    raw = " ".join(str(text).split())
    if not raw:
        raise ScheduleError("the schedule is empty; " + _ACCEPTED)
    word, _, rest = raw.partition(" ")
    word = word.lower()
    if word == "every":
        seconds = _duration(rest)
        if seconds < MIN_INTERVAL:
            raise ScheduleError(f"'{raw}' is too often: the shortest interval is 1m")
        return Schedule("interval", f"every {rest}", seconds=seconds)
    if word == "in":
        at = now + _duration(rest)
        return Schedule("once", _at_text(at), at=at)
    if word == "at":
        at = _timestamp(rest)
        if at <= now:
            raise ScheduleError(f"'{rest}' is in the past")
        return Schedule("once", _at_text(at), at=at)
    from croniter import croniter

    fields = raw.split(" ")
    if len(fields) != 5 or not croniter.is_valid(raw):
        raise ScheduleError(f"'{raw}' is not a schedule; " + _ACCEPTED)
    return Schedule("cron", raw, expression=raw)


def from_stored(text: str) -> Schedule:
    """The schedule of a stored job (its ``schedule`` text is always absolute)."""
    return parse(text, now=0.0)


_ACCEPTED = (
    "use a cron expression ('0 9 * * 1-5'), an interval ('every 30m'), or one time "
    "('at 2026-12-24T09:00', 'in 2h')"
)


def _duration(text: str) -> int:
    match = _DURATION_RE.match(text)
    if not match:
        raise ScheduleError(f"'{text}' is not a duration; use e.g. 90s, 30m, 2h, 1d or 1w")
    number, unit = int(match.group(1)), match.group(2).lower()
    if number <= 0:
        raise ScheduleError(f"'{text}' is not a positive duration")
    return number * _UNITS[unit[0]]


def _timestamp(text: str) -> float:
    try:
        moment = _dt.datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError:
        raise ScheduleError(
            f"'{text}' is not a date and time; use ISO format, e.g. 2026-12-24T09:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time
    return moment.timestamp()


def _at_text(at: float) -> str:
    return "at " + _dt.datetime.fromtimestamp(at).astimezone().isoformat(timespec="seconds")


def _duration_text(seconds: int) -> str:
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
