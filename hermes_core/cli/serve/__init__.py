"""``hermes serve``: a resident process that keeps the SDKs, plugins and configuration loaded,
and runs each ``hermes chat -q`` of the same user in a child forked from it.

- :mod:`.registration`: where a resident process is announced and what "same install" means;
- :mod:`.wire`: the messages between a caller and the resident process, file descriptors
  included;
- :mod:`.peer`: whether a caller may be served (same user, same confinement);
- :mod:`.server`: the resident process and the children it forks;
- :mod:`.client`: the caller's side, tried before anything else is imported;
- :mod:`.auto`: ``serve.auto``, a resident process started by a call that found none;
- :mod:`.command`: the ``serve`` command.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ForkedCall(BaseException):
    """Raised in a child the resident process forked, through every frame of the resident
    process (its ``finally`` clauses and context managers unwind), to the console script, which
    then runs :attr:`call` as a fresh invocation."""

    def __init__(self, call: Any) -> None:
        super().__init__("forked")
        self.call = call
