"""``hermes usage``: what the model calls cost, from the store's per-call records, grouped by
day, model, person, scheduled job or pooled key."""

from __future__ import annotations

import datetime as _dt
import re
import time

import click

from hermes_hookspecs import HermesError, UsageLedger

from .helpers import current_state, show_json, show_table
from .session_refs import open_store

_SPAN = re.compile(r"^(\d+)([hdw])$")


def parse_since(text: str | None, now: float | None = None) -> float:
    """``time.time()`` of ``--since``: ``today``, ``7d``, ``12h``, ``2w``, or a date
    ``YYYY-MM-DD`` (local midnight); nothing means the last 30 days.

    :raises HermesError: anything else, in one line.
    """
    now = time.time() if now is None else now
    if not text:
        return now - 30 * 86400
    text = text.strip().lower()
    if text == "today":
        today = _dt.datetime.fromtimestamp(now).date()
        return _dt.datetime.combine(today, _dt.time()).timestamp()
    span = _SPAN.match(text)
    if span:
        unit = {"h": 3600, "d": 86400, "w": 7 * 86400}[span.group(2)]
        return now - int(span.group(1)) * unit
    try:
        day = _dt.date.fromisoformat(text)
    except ValueError:
        raise HermesError(
            f"--since {text!r}: expected today, a span (12h, 7d, 2w) or a date (YYYY-MM-DD)"
        ) from None
    return _dt.datetime.combine(day, _dt.time()).timestamp()


@click.command("usage")
@click.option(
    "--by",
    type=click.Choice(["day", "model", "user", "job", "key"]),
    default="day",
    show_default=True,
    help="How to group the calls.",
)
@click.option("--since", default=None, help="today, 12h, 7d, 2w or YYYY-MM-DD (default: 30d).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def usage(by: str, since: str | None, as_json: bool) -> None:
    """Tokens and estimated cost of model calls, from the store's per-call records."""
    start = parse_since(since)
    store = open_store(current_state())
    if not isinstance(store, UsageLedger):
        raise HermesError(f"the session store ({type(store).__name__}) keeps no usage records")
    rows = store.usage_rows(start, by)
    if as_json:
        show_json(rows)
        return
    if not rows:
        click.echo("no model calls recorded in that period")
        return
    table = [
        [
            str(row["group"]),
            str(row["calls"]),
            f"{row['input_tokens']:,}",
            f"{row['cache_read_tokens']:,}",
            f"{row['output_tokens']:,}",
            f"${row['cost_usd']:.4f}",
            str(row["unpriced_calls"] or "-"),
        ]
        for row in rows
    ]
    total = sum(row["cost_usd"] for row in rows)
    table.append(
        [
            "total",
            str(sum(row["calls"] for row in rows)),
            f"{sum(row['input_tokens'] for row in rows):,}",
            f"{sum(row['cache_read_tokens'] for row in rows):,}",
            f"{sum(row['output_tokens'] for row in rows):,}",
            f"${total:.4f}",
            str(sum(row["unpriced_calls"] for row in rows) or "-"),
        ]
    )
    header = {"user": "PERSON", "key": "PROVIDER:KEY"}.get(by, by.upper())
    show_table(table, [header, "CALLS", "INPUT", "CACHED", "OUTPUT", "COST", "UNPRICED"])
    from ..models.pricing import builtin_table

    click.echo(
        f"costs are estimates: list prices as of {builtin_table()[0]}, and pricing: in "
        "config.yaml; UNPRICED calls are of models with no price"
    )
