r"""Text a provider and the session store can carry: every string encodable as UTF-8.

Text from outside (tool results, model output, user input, old stored sessions) may hold lone
surrogates (``"\udcff"`` from undecodable bytes); one such character in a transcript would make
every later request and every save fail, so it goes through :func:`clean_text` once, at the
boundary where it enters.
"""

from __future__ import annotations

from typing import Any

from ..session_store.surrogates import encodable, replace_surrogates

__all__ = ["clean_text", "clean_value"]


def clean_text(text: str) -> str:
    r"""``text`` as UTF-8 can carry it: surrogate pairs joined into their character, lone
    surrogates (``"\\udcff"`` from undecodable bytes, ``"\\ud800"``) replaced by U+FFFD.

    One such character in a message would make every later request and every save of the
    session fail, so text from outside (tool results, model output, user input) goes through
    this once before it enters a transcript.
    """
    cleaned: str = replace_surrogates(text)
    return cleaned


def clean_value(value: Any) -> Any:
    """``value`` with :func:`clean_text` applied to every string in it (dict keys and values,
    list items); the same object when nothing needed cleaning."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, (dict, list)) and encodable(value):
        return value  # the common case, checked without building a copy to compare
    return _cleaned(value)


def _cleaned(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        cleaned = {_cleaned(k): _cleaned(v) for k, v in value.items()}
        same = all(
            a is b and c is d for (a, c), (b, d) in zip(value.items(), cleaned.items(), strict=True)
        )
        return value if same and len(cleaned) == len(value) else cleaned
    if isinstance(value, list):
        items = [_cleaned(item) for item in value]
        return value if all(a is b for a, b in zip(value, items, strict=True)) else items
    return value
