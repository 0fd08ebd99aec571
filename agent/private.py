"""Private by default: the data dir is 0700 and every store or cache in it 0600.

The data dir holds conversations (askdesk.sqlite), feedback, the embedding cache and the
vector store, i.e. staff questions and the organisation's documents: nobody else on the
machine should read them, whatever the umask. SQLite gives its -wal/-journal files the mode of
the database file, so creating the database 0600 covers them too.
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
