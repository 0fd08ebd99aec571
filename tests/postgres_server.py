"""A private PostgreSQL server for the tests: `initdb` in a new temporary directory, started on a
free loopback port with its socket in that directory, stopped and removed at the end of the
session. Never a shared server. PostgreSQL refuses to run as root, so under root (CI
containers) it runs as the `postgres` system user that Debian's package creates.

Found on PATH or under /usr/lib/postgresql/<version>/bin; `scripts/test` installs Debian's
postgresql package when neither has it (tests that need it are skipped, saying so, otherwise).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

ADMIN = "askdesk"


def bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    return versions[-1].parent if versions else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="askdesk-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.user = "postgres" if os.geteuid() == 0 else None  # the server's system user under root

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=check)

    def start(self) -> "PostgresServer":
        if self.user:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", ADMIN, "--auth=trust", "-E", "UTF8", "--no-sync")
        self._pg_ctl("start")
        self._watchdog = self._watch()
        return self

    def _watch(self) -> subprocess.Popen:
        """Stops the server when this process dies without `stop()` (a killed test run): the
        watchdog's stdin is a pipe only we hold, so its `read` returns when we are gone."""
        stop = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"]
        if self.user:
            stop = ["runuser", "-u", self.user, "--", *stop]
        script = f"read _; {subprocess.list2cmdline(stop)} >/dev/null 2>&1; rm -rf {self.root}"
        return subprocess.Popen(["sh", "-c", script], stdin=subprocess.PIPE, start_new_session=True)

    def _pg_ctl(self, action: str) -> None:
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", action)

    def restart(self) -> None:
        """Every client connection is dropped (what a database restart or failover does)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        self._pg_ctl("start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        if self._watchdog.stdin:
            self._watchdog.stdin.close()
        self._watchdog.wait(timeout=30)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{ADMIN}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database: each test its own."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self._run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", ADMIN, "-d", "postgres", "-q",
                  "-c", f"CREATE DATABASE {name}")
        return self.url(name)
