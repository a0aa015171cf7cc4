"""Small file writes that never leave a half-written file: a temp file beside the target, then one rename."""

from __future__ import annotations

import os
import re
import stat
import tempfile
import time
from pathlib import Path

# A temp file this old whose writer is gone was left by a kill; younger ones are left alone, so a writer
# in another PID namespace (a container on a shared folder), which looks gone from here, is never swept
# mid-write (issue 26).
STALE_TEMP_AGE_S = 60.0


def write_text_atomic(path: Path, text: str, *, private: bool = False) -> None:
    """Replace `path` with `text` in one rename; `private` makes it readable by the owner only (0600).

    The temp file is `.NAME.PID.XXXXXXXX` beside `path`; ones that earlier writes to `path` left behind when
    they were killed are swept first.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temps(path)
    handle, staging = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        # mkstemp makes the file 0600: keep the target's mode (or a file's usual 0644) unless private
        mode = 0o600 if private else stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
        os.chmod(staging, mode)
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def sweep_stale_temps(path: Path) -> list[Path]:
    """Remove the temp files of writes to `path` that were killed: older than STALE_TEMP_AGE_S and made by a
    process that no longer runs (or named before temp files carried their writer's pid). The ones removed."""
    own = re.compile(rf"\.{re.escape(path.name)}\.(?:(?P<pid>\d+)\.)?[^.]+")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        match = own.fullmatch(entry.name)
        if match is None or (match["pid"] and pid_running(int(match["pid"]))):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and time.time() - info.st_mtime > STALE_TEMP_AGE_S:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:  # gone already (another sweeper), or not ours to remove
            continue
    return removed


def pid_running(pid: int) -> bool:
    """Whether a process with this id runs (signal 0 only asks); 0 and negative ids name groups, never a writer."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # another user's live process
        return True
    return True
