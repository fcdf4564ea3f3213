"""Delivering the answers scheduled jobs queued for chats (``$HERMES_HOME/cron/outbox/``,
written by hermes-cron for ``--deliver PLATFORM:CHAT_ID``)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from .platforms import PlatformAdapter

Allowed = Callable[[str | None, str, str], bool]
"""``allowed(person, platform, chat_id)``: whether a job of ``person`` (``None``: the owner's)
may send to that chat."""


def _everywhere(person: str | None, platform: str, chat_id: str) -> bool:
    return True


async def deliver_outbox(
    folder: Path,
    adapters: Mapping[str, PlatformAdapter],
    log: Callable[[str], None],
    failed: set[str] | None = None,
    allowed: Allowed = _everywhere,
) -> int:
    """Send every queued message whose platform is served here and delete it; return how
    many were sent. A message is claimed by renaming it first, so two gateways sharing a home
    never send it twice; one that fails to send stays queued (and is reported once). A
    person's message for a chat that is not theirs (``allowed``) is not sent: it is kept as
    ``<name>.refused`` and reported."""
    failed = failed if failed is not None else set()
    sent = 0
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            message = json.loads(path.read_text(encoding="utf-8"))
            platform, chat_id = str(message["platform"]), str(message["chat_id"])
            text = str(message["text"])
            person = message.get("person")
            person = str(person) if person is not None else None
        except FileNotFoundError:
            continue
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if path.name not in failed:
                failed.add(path.name)
                log(f"gateway: outbox message {path.name} is unreadable: {exc}")
            continue
        adapter = adapters.get(platform)
        if adapter is None:
            continue  # for a platform another gateway serves
        if not allowed(person, platform, chat_id):
            try:
                os.rename(path, path.with_name(path.name + ".refused"))
            except FileNotFoundError:
                continue  # someone else took it
            log(
                f"gateway: refused scheduled job message {path.name}: {platform}:{chat_id} is "
                f"not a chat of {person}'s (kept as {path.name}.refused)"
            )
            continue
        claimed = path.with_name(path.name + f".sending-{os.getpid()}")
        try:
            os.rename(path, claimed)
        except FileNotFoundError:
            continue  # someone else took it
        try:
            await adapter.send(chat_id, text)
        except Exception as exc:
            os.rename(claimed, path)
            if path.name not in failed:
                failed.add(path.name)
                log(f"gateway: could not deliver the scheduled job message {path.name}: {exc}")
            continue
        claimed.unlink()
        sent += 1
    return sent


async def keep_delivering(
    folder: Path,
    adapters: Mapping[str, PlatformAdapter],
    interval: float,
    log: Callable[[str], None],
    allowed: Allowed = _everywhere,
) -> None:
    """Deliver the outbox every ``interval`` seconds until cancelled."""
    failed: set[str] = set()
    while True:
        try:
            count = await deliver_outbox(folder, adapters, log, failed, allowed)
            if count:
                log(f"gateway: delivered {count} scheduled job message(s)")
        except Exception as exc:  # keep serving chats whatever the outbox holds
            log(f"gateway: outbox: {type(exc).__name__}: {exc}")
        await asyncio.sleep(interval)
