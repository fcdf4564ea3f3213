"""The factory of a messaging platform adapter, as ``hermes_register_platform_adapters``
registers it.

The adapter's type, the message it hands over and the gateway it hands it to serve one plugin,
the messaging gateway, and are declared there (``hermes_gateway.PlatformAdapter``,
``InboundMessage``, ``Attachment``, ``Gateway``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PlatformAdapterFactory = Callable[[str, Mapping[str, Any]], Any]
"""``factory(name, settings)``: an adapter (a ``hermes_gateway.PlatformAdapter``) for the
platform configured as ``gateway.platforms.<name>`` with those ``settings`` (that mapping)."""

__all__ = ["PlatformAdapterFactory"]
