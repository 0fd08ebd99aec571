"""One serving process per data directory.

The embedded stores (Qdrant's directory, the SQLite files) admit one process at a time,
so a second `askdesk serve` on the same data dir must stop at once with a clear message
(serve both surfaces from one process instead) rather than fail later on a locked store.
An OS file lock (flock) is released by the kernel when the process dies, so a crash never
leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = "serve.lock"


class DataDirBusy(Exception):
    pass


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> "DataDirLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode(errors="replace").strip()
            os.close(fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise DataDirBusy(
                f"another askdesk serve is already running on the data dir {self.path.parent}{who}: stop it, or "
                "serve both surfaces from one process with `askdesk serve slack teams` (the embedded stores admit "
                "one process at a time)."
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
