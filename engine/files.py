"""Small file writes that never leave a half-written file: a temp file beside the target, then one rename."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def write_text_atomic(path: Path, text: str, *, private: bool = False) -> None:
    """Replace `path` with `text` in one rename; `private` makes it readable by the owner only (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
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
