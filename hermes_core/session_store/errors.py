"""The session store's error and the hints its messages end with."""

from __future__ import annotations

from hermes_hookspecs import HermesError

REPAIR_HINT = "move it away or run `hermes sessions repair`"
FIND_IDS_HINT = "`hermes sessions list` or `hermes sessions search TEXT` show the ids"


class SessionStoreError(HermesError):
    """The session store cannot do what was asked; the message is one line that says why and,
    where there is one, the way out."""
