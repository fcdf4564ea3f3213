"""Lock files that leave nothing behind: one holder at a time among threads, a cancelled wait,
and the file gone once the lock is let go."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from hermes_runtime.lock_files import LockFileError, LockFiles, lock_name


def test_one_holder_at_a_time_and_no_file_left(tmp_path: Path) -> None:
    locks = LockFiles(tmp_path / "locks")
    inside, most = [0], [0]
    guard = threading.Lock()

    def turn() -> None:
        for _ in range(20):
            with locks.hold("s1", threading.Event()) as held:
                assert held
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.0005)
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=turn) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1
    assert list((tmp_path / "locks").iterdir()) == []


def test_a_cancelled_wait_holds_nothing(tmp_path: Path) -> None:
    locks, cancel = LockFiles(tmp_path), threading.Event()
    with locks.hold("s1", threading.Event()):
        threading.Timer(0.05, cancel.set).start()
        with locks.hold("s1", cancel) as held:
            assert held is False
    with locks.hold("s2", threading.Event()) as other:
        assert other  # other keys are never blocked


def test_a_symbolic_link_in_place_of_a_lock_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / lock_name("s1")).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(LockFileError, match="it is a symbolic link$"):
        with LockFiles(tmp_path).hold("s1", threading.Event()):
            pass
    assert not (tmp_path / "elsewhere").exists()
