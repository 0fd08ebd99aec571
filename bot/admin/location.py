"""Where the admin socket lives, and how a client finds it.

A Unix socket's path must fit in about 100 bytes (108 on Linux, 104 on macOS, with the NUL), so
`<data_dir>/admin.sock` works only for a short data dir. Otherwise the socket goes in a private
runtime directory: `$XDG_RUNTIME_DIR/askdesk/` or `<tempdir>/askdesk-<uid>/` (0700, ours),
named by a hash of the data dir. The bot records the path it listens on in the data dir's lock
file (agent/store/lock.py), where every client reads it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

from bot.admin import SOCKET_NAME

MAX_PATH = 100  # bytes; leaves room under every platform's limit


def _fits(path: Path) -> bool:
    return len(os.fsencode(str(path))) <= MAX_PATH


def _private_runtime_dir(base: Path, name: str) -> Path | None:
    """`base/name`, created 0700; None unless it is a real directory that only we can enter
    (in a shared temp dir another user could have made it first)."""
    path = base / name
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return None
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(path, 0o700)
    except OSError:
        return None
    return path


def socket_path(data_dir: Path) -> Path | None:
    """Where a bot serving `data_dir` listens: the data dir when the path fits, else a private
    runtime directory; None when no place fits (the caller says so)."""
    inside = data_dir / SOCKET_NAME
    if _fits(inside):
        return inside
    key = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16] + ".sock"
    bases = [(os.environ.get("XDG_RUNTIME_DIR"), "askdesk"), (tempfile.gettempdir(), f"askdesk-{os.getuid()}")]
    for base, name in bases:
        if base and _fits(Path(base) / name / key):
            folder = _private_runtime_dir(Path(base), name)
            if folder is not None:
                return folder / key
    return None


def recorded_path(holder: dict, data_dir: Path) -> Path:
    """The socket a client should connect to: the one the bot recorded, else the default."""
    recorded = holder.get("admin_socket")
    return Path(recorded) if recorded else data_dir / SOCKET_NAME
