"""The default hermes context engine, ``compressor``.

Registered under the name ``compressor``; it is the engine the host uses when ``context.engine``
is not set. The engine itself lives in :mod:`hermes_engine_compressor.engine` and is imported
only when engines are looked up, so loading this plugin costs nothing at start-up.
"""

from __future__ import annotations

from typing import Any

from hermes_hookspecs import hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin


@hookimpl
def hermes_register_context_engines(register: Any) -> None:
    """Register :class:`~hermes_engine_compressor.engine.Compressor`."""
    from .engine import Compressor

    register(Compressor)
