"""The URL schemes the PostgreSQL session store serves (``store.url``)."""

SCHEMES = ("postgresql", "postgres")
"""``postgresql://...`` and ``postgres://...``, as libpq reads both."""
