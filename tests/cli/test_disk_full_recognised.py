"""Which failures are a full disk (engine.disk): the words SQLite, Chroma's Rust core and the C library use for
it, measured on a full tmpfs and under a file size limit, and nothing else (issue 26 item 6)."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest
from chromadb.errors import InternalError, NotFoundError

from engine.disk import LOW_SPACE_BYTES, is_disk_full, raising_disk_full
from engine.errors import DiskFull, RunCancelled

COMPACTION = "Error in compaction: Failed to apply logs to the metadata segment"  # Chroma, full tmpfs, no reason


def _raised_from(cause: OSError) -> ValueError:
    """A library's own error raised while it handled `cause` (as chromadb re-raises httpx's errors)."""
    try:
        try:
            raise cause
        except OSError:
            raise ValueError("could not write the batch")  # noqa: B904  chained implicitly, as chromadb does
    except ValueError as exc:
        return exc


@pytest.mark.parametrize("exc", [
    InternalError("error returned from database: (code: 13) database or disk is full"),
    InternalError("Error executing query: Database error: error returned from database: (code: 13) database or "
                  "disk is full"),
    RuntimeError("IO error: No space left on device (os error 28)"),
    RuntimeError("File too large (os error 27)"),
    OSError(errno.ENOSPC, "No space left on device"),
    OSError(errno.EFBIG, "File too large"),
    OSError(errno.EDQUOT, "Disk quota exceeded"),
    _raised_from(OSError(errno.ENOSPC, "No space left on device")),
], ids=repr)
def test_a_full_disk_is_recognised_in_every_wording_met(exc):
    assert is_disk_full(exc)


@pytest.mark.parametrize("exc", [
    InternalError("error returned from database: (code: 778) disk I/O error"),
    InternalError(COMPACTION),
    PermissionError(errno.EACCES, "Permission denied"),
    OSError(errno.ENOENT, "No such file or directory"),
    ValueError("upload.pdf is 30 MB: file too large, at most 25 MB are taken"),
], ids=repr)
def test_other_failures_are_not_a_full_disk(exc):
    assert not is_disk_full(exc)


@pytest.fixture
def space(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The free bytes the file system reports (set by the test)."""
    free = [LOW_SPACE_BYTES * 100]
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(free[0] * 2, free[0], free[0]))
    return free


def test_an_unexplained_chroma_failure_counts_as_a_full_disk_only_when_space_is_low(tmp_path: Path, space):
    with pytest.raises(InternalError):
        with raising_disk_full(tmp_path, unexplained=(InternalError,)):
            raise InternalError(COMPACTION)
    space[0] = LOW_SPACE_BYTES - 1
    with pytest.raises(DiskFull, match=f"^{tmp_path}: out of disk space \\({COMPACTION}\\); free some space"):
        with raising_disk_full(tmp_path, unexplained=(InternalError,)):
            raise InternalError(COMPACTION)


def test_low_space_never_turns_other_failures_into_a_full_disk(tmp_path: Path, space):
    space[0] = 0
    for failure in (RunCancelled("stopped"), ValueError("a bug"), NotFoundError("Collection rs-x does not exist")):
        with pytest.raises(type(failure)):
            with raising_disk_full(tmp_path, unexplained=(InternalError,)):
                raise failure
