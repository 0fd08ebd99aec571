"""Private by default: the data dir is 0700 and every directory in it 0700, every file 0600.

The data dir holds conversations (askdesk.sqlite), feedback, the embedding cache and the
vector store, i.e. staff questions and the organisation's documents: nobody else on the
machine should read them, whatever the umask. SQLite gives its -wal/-journal files the mode of
the database file, so creating the database 0600 covers them too. Qdrant Edge (Rust) creates its
segment and WAL files itself, with the process umask: a process that opens the embedded store
keeps group and other bits out of its umask (`restrict_umask`), and files left by an older
version or another umask are tightened when the store is opened (`private_tree`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create `path` (and parents) and make it 0700; a dir we cannot chmod is left as it is."""
    path = Path(path)
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    _tighten(path, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Make sure `path` exists with mode 0600 before a library (SQLite) opens it, and that
    its directory is private."""
    path = Path(path)
    private_dir(path.parent)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, FILE_MODE)  # mode applies when it is created
    os.close(fd)
    _tighten(path, FILE_MODE)
    return path


def _tighten(path: Path, mode: int) -> None:
    try:
        if stat.S_IMODE(os.stat(path).st_mode) & ~mode:
            os.chmod(path, mode)
    except OSError:  # not ours (e.g. a shared mount): leave it, never fail a command over it
        pass


def restrict_umask() -> None:
    """Keep group and other bits out of every file this process creates from now on."""
    old = os.umask(0o077)  # set first, so the umask is never looser, not even for an instant
    os.umask(old | 0o077)


def private_tree(root: Path) -> None:
    """Directories 0700 and files 0600 under `root` (symbolic links are left alone)."""
    for dirpath, _dirnames, filenames in os.walk(root):
        _tighten(Path(dirpath), DIR_MODE)
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                _tighten(path, FILE_MODE)
