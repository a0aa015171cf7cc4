"""A full disk recognised in the errors a write raises, ours and Chroma's, and turned into DiskFull (issue 26)."""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.errors import DiskFull, RagscopeError

# ENOSPC; EDQUOT (a quota); EFBIG: the file size limit (RLIMIT_FSIZE), to the user the same "no room to write"
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# how SQLite (SQLITE_FULL), Rust's std::io and the C library word those errnos inside other libraries' messages
_WORDINGS = ("database or disk is full", "no space left on device", "disk quota exceeded",
             f"(os error {errno.ENOSPC})", f"(os error {errno.EDQUOT})", f"(os error {errno.EFBIG})")
# Chroma sometimes words a full disk as a failed step ("Error in compaction: Failed to apply logs to the
# metadata segment", measured on a full 20 MB tmpfs); with less than this left, that is the likely cause
LOW_SPACE_BYTES = 64 * 1024 * 1024


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from, says the disk (or the file size limit) is full."""
    return any((isinstance(e, OSError) and e.errno in DISK_FULL_ERRNOS)
               or any(wording in str(e).lower() for wording in _WORDINGS) for e in exception_chain(exc))


def exception_chain(exc: BaseException | None) -> Iterator[BaseException]:
    """`exc` and those it was raised from or while handling: libraries re-raise an OSError as their own error."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def low_space(folder: Path) -> bool:
    """Whether the file system holding `folder` (or its nearest existing parent) has under LOW_SPACE_BYTES free."""
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    try:
        return existing is not None and shutil.disk_usage(existing).free < LOW_SPACE_BYTES
    except OSError:
        return False


def disk_full(folder: Path, exc: BaseException) -> DiskFull:
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
    return DiskFull(str(folder), detail)


@contextmanager
def raising_disk_full(folder: Path, *, unexplained: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Re-raise a full disk met in the block as DiskFull naming `folder`; other errors pass unchanged.

    `unexplained`: errors of these types count too while `folder`'s disk is nearly full (for Chroma's
    InternalError, whose message does not always say why a write failed).
    """
    try:
        yield
    except RagscopeError:  # DiskFull already, or a deliberate error (a cancelled run) that is not about space
        raise
    except Exception as exc:
        if is_disk_full(exc) or (isinstance(exc, unexplained) and low_space(folder)):
            raise disk_full(folder, exc) from exc
        raise
