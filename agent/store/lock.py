"""One process per embedded data directory: an advisory `flock` on `<data_dir>/store.lock`.

Qdrant Edge's WAL admits one writer per shard; taking our own lock first turns a second
process into one clear `StoreInUse` line (naming the holder) instead of a WAL error deep in
Rust, and the kernel drops the lock when the holder dies, even on kill -9.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from pathlib import Path

from agent.private import private_dir

LOCK_FILE = "store.lock"


class StoreInUse(Exception):
    """Another process holds the embedded store. The message is one line meant for the user."""

    def __init__(self, message: str, *, holder: dict | None = None) -> None:
        super().__init__(message)
        self.holder = holder or {}


def _describe_self() -> str:
    """`askdesk <command>` (never the arguments: they may be a user's question)."""
    words = [a for a in sys.argv[1:3] if not a.startswith("-")]
    if words and words[0] != "serve":
        words = words[:1]
    return " ".join(["askdesk", *words]) if words else "askdesk"


def read_holder(data_dir: Path) -> dict:
    try:
        return json.loads((data_dir / LOCK_FILE).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


def record_holder(data_dir: Path, **fields: object) -> None:
    """Add `fields` to the holder record (a None removes one); only the holder calls this.
    Written in place: the lock belongs to this file's inode, a rename would drop it."""
    holder = {**read_holder(data_dir), **fields}
    content = json.dumps({k: v for k, v in holder.items() if v is not None}).encode()
    fd = os.open(data_dir / LOCK_FILE, os.O_WRONLY)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, content, 0)
    finally:
        os.close(fd)


def in_use_message(data_dir: Path, holder: dict) -> str:
    who = f"pid {holder.get('pid', '?')}: {holder.get('command', 'another askdesk process')}"
    others = ("for other commands stop the bot, use another ASKDESK_DATA_DIR, or share a Qdrant server "
              "(ASKDESK_QDRANT_URL); to serve Slack and Teams, run both from one process: "
              "`askdesk serve slack teams`")
    if str(holder.get("command", "")).startswith("askdesk serve") and holder.get("admin_socket"):
        hint = f"`askdesk ingest` and `askdesk registry ingest` are handed to it automatically; {others}"
    elif str(holder.get("command", "")).startswith("askdesk serve"):
        hint = ("its admin channel is not running (see the bot's log), so `askdesk ingest` cannot be handed to it: "
                f"stop the bot to ingest; {others}")
    else:
        hint = "run the command again when it has finished, or use another ASKDESK_DATA_DIR"
    return f"the data directory {data_dir} is in use by another askdesk process ({who}); {hint}"


class DirectoryLock:
    """Held for the life of an embedded store; released by `release()` or process exit."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._fd: int | None = None

    def acquire(self) -> "DirectoryLock":
        private_dir(self.data_dir)
        fd = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = read_holder(self.data_dir)
            raise StoreInUse(in_use_message(self.data_dir, holder), holder=holder) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "command": _describe_self()}).encode())
        self._fd = fd
        return self

    @classmethod
    def check_free(cls, data_dir: Path) -> None:
        """StoreInUse now if another process holds `data_dir` (a probe: nothing stays locked)."""
        if (data_dir / LOCK_FILE).exists():
            cls(data_dir).acquire().release()

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            finally:
                os.close(self._fd)  # closing the descriptor drops the flock
                self._fd = None
