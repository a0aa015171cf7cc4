"""One writer per folder across processes (issue 26): an exclusive `flock` on a lock file, held while the
object that took it lives.

The kernel drops a flock when its process dies, so a killed writer never blocks the next one; the file
(holding the writer's pid, for the message another process shows) is removed when the lock is let go.
Within one process the same lock is shared, not refused: what it keeps apart are processes.
"""

from __future__ import annotations

import fcntl
import os
import threading
import weakref
from collections.abc import Callable
from pathlib import Path

from engine.errors import RagscopeError

Busy = Callable[[str], RagscopeError]  # the error to raise, given the holder's pid ("" when it wrote none yet)
_HELD: weakref.WeakValueDictionary[str, HeldLock] = weakref.WeakValueDictionary()
_GUARD = threading.Lock()


class HeldLock:
    """An exclusive flock on `path`, let go (and the file removed) when this object is collected or at exit."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        weakref.finalize(self, _let_go, path, fd)


def hold(path: Path, busy: Busy) -> HeldLock:
    """The lock on `path` (created, with its folder, if missing); `busy(pid)` raised when another process holds it."""
    with _GUARD:
        held = _HELD.get(str(path))
        if held is None:
            held = HeldLock(path, _take(path, busy))
            _HELD[str(path)] = held
        return held


def _take(path: Path, busy: Busy) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise busy(holder) from None
        except BaseException:
            os.close(fd)
            raise
        # the holder before us may have removed the file after we opened it: only the file at `path` counts
        if _same_file(path, fd):
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except BaseException:
        _let_go(path, fd)
        raise
    return fd


def _same_file(path: Path, fd: int) -> bool:
    try:
        on_disk, opened = os.stat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (on_disk.st_dev, on_disk.st_ino) == (opened.st_dev, opened.st_ino)


def _let_go(path: Path, fd: int) -> None:
    """Remove the file while still holding the lock (a waiter that opened it sees it gone), then let go."""
    try:
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)
