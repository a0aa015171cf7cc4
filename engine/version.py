"""ragscope's version, and the git commit of the checkout it runs from: what a run card names as "the code".

The commit is read from the .git files themselves (HEAD, then the ref it names, loose or packed), never by
running git: no subprocess, no network, and "" wherever this is not a git checkout (an installed copy).
"""

from __future__ import annotations

import re
from pathlib import Path

VERSION = "0.28.0"
ROOT = Path(__file__).resolve().parents[1]
_SHA = re.compile(r"[0-9a-f]{40}")


def git_commit(root: Path = ROOT) -> str:
    """The commit checked out at `root` (a plain clone or a `git worktree`), or "" when there is none to read."""
    try:
        git_dir = _git_dir(root)
        if git_dir is None:
            return ""
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if _SHA.fullmatch(head):  # a detached HEAD holds the commit itself
            return head
        if not head.startswith("ref: "):
            return ""
        return _ref(git_dir, head[len("ref: "):].strip())
    except (OSError, UnicodeDecodeError):
        return ""


def _git_dir(root: Path) -> Path | None:
    """root/.git, or the folder a worktree's .git file points to ("gitdir: …")."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():
        text = dot_git.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir: "):
            target = Path(text[len("gitdir: "):])
            return target if target.is_absolute() else (root / target).resolve()
    return None


def _ref(git_dir: Path, ref: str) -> str:
    """The commit `ref` names: in the worktree's own folder, the shared one (commondir), or packed-refs."""
    folders = [git_dir]
    common = git_dir / "commondir"
    if common.is_file():
        folders.append((git_dir / common.read_text(encoding="utf-8").strip()).resolve())
    for folder in folders:
        loose = folder / ref
        if loose.is_file():
            sha = loose.read_text(encoding="utf-8").strip()
            return sha if _SHA.fullmatch(sha) else ""
    for folder in folders:
        packed = folder / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref and _SHA.fullmatch(sha):
                    return sha
    return ""
