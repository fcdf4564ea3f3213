"""Reading a framed script's output from a channel: a thread that pumps the channel's chunks into
a queue (:class:`ChannelPump`) and the parser that finds the script's pid line and end marker and
caps the output in between (:class:`MarkerReader`). The markers themselves are written by
:func:`hermes_env_common.scripts.frame`."""

from __future__ import annotations

import queue
import threading
import time
from typing import Final

from .channel import Channel

__all__ = ["TIMED_OUT", "ChannelPump", "MarkerReader"]

TIMED_OUT: Final = False
"""What :meth:`ChannelPump.next` returns when its deadline passed."""

Item = bytes | BaseException | None | bool


class ChannelPump:
    """Reads ``channel.chunks()`` on a daemon thread; :meth:`next` hands the items out: bytes,
    the exception the channel raised, ``None`` at end-of-file, or :data:`TIMED_OUT`."""

    def __init__(self, channel: Channel, name: str) -> None:
        self._items: queue.SimpleQueue[bytes | BaseException | None] = queue.SimpleQueue()
        self._channel = channel
        threading.Thread(target=self._pump, name=name, daemon=True).start()

    def _pump(self) -> None:
        try:
            for chunk in self._channel.chunks():
                if chunk:
                    self._items.put(bytes(chunk))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            self._items.put(exc)
        finally:
            self._items.put(None)

    def next(self, until: float | None) -> Item:
        """The next item, waiting until the monotonic time ``until`` (``None``: no limit)."""
        try:
            if until is None:
                return self._items.get()
            remaining = until - time.monotonic()
            if remaining <= 0:
                return TIMED_OUT
            return self._items.get(timeout=remaining)
        except queue.Empty:
            return TIMED_OUT


class MarkerReader:
    """The output of one framed script: everything before its pid line is dropped, everything
    from the end marker on is not output. Keeps at most about ``max_bytes`` (the head and the
    tail; the middle is counted and replaced by a note)."""

    def __init__(self, nonce: str, max_bytes: int) -> None:
        self._pid_tag = f"\x1eHPID{nonce} ".encode()
        self._end_tag = f"\n\x1eHEND{nonce} ".encode()
        self._max = max_bytes
        self._head_keep = max_bytes // 2
        self._buf = bytearray()
        self._search_from = 0
        self._end_at = -1
        self.started = False
        self.pid: int | None = None
        self.exit_code: int | None = None
        self.dropped = 0

    @property
    def finished(self) -> bool:
        """Whether the end marker arrived."""
        return self._end_at >= 0

    def feed(self, chunk: bytes) -> bool:
        """Take a chunk; ``True`` once the end marker is complete."""
        self._buf += chunk
        if not self.started and not self._find_pid():
            return False
        if self._find_end():
            return True
        self._cap()
        return False

    def _find_pid(self) -> bool:
        buf = self._buf
        at = buf.find(self._pid_tag)
        if at < 0:
            return False
        newline = buf.find(b"\n", at + len(self._pid_tag))
        if newline < 0:
            return False
        try:
            self.pid = int(buf[at + len(self._pid_tag) : newline])
        except ValueError:
            self.pid = None
        del buf[: newline + 1]
        self.started = True
        self._search_from = 0
        return True

    def _find_end(self) -> bool:
        buf, tag = self._buf, self._end_tag
        at = buf.find(tag, max(0, self._search_from))
        if at < 0:
            self._search_from = max(0, len(buf) - len(tag) - 32)
            return False
        newline = buf.find(b"\n", at + len(tag))
        if newline < 0:
            self._search_from = at
            return False
        try:
            self.exit_code = int(buf[at + len(tag) : newline])
        except ValueError:
            self.exit_code = -1
        self._end_at = at
        return True

    def _cap(self) -> None:
        buf = self._buf
        if len(buf) > self._max + (1 << 20):
            cut = len(buf) - self._max // 2 - self._head_keep
            self.dropped += cut
            del buf[self._head_keep : self._head_keep + cut]
            self._search_from = max(0, len(buf) - len(self._end_tag) - 32)

    def output(self) -> bytes:
        """The output so far (up to the end marker), with a note where bytes were dropped."""
        output = bytes(self._buf[: self._end_at] if self._end_at >= 0 else self._buf)
        if self.dropped:
            note = f"\n[... {self.dropped} bytes of output dropped ...]\n".encode()
            output = output[: self._head_keep] + note + output[self._head_keep :]
        return output
