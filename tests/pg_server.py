"""Start a real, throw-away PostgreSQL server (Debian's ``postgresql`` package) for tests and benchmarks.

>>> with running_postgres() as url:        # postgresql://griffon@127.0.0.1:PORT/postgres
...     store = open_store(url)

``initdb`` into a temporary folder, ``pg_ctl start`` on a free 127.0.0.1 port (Unix socket in the same
folder), trust authentication for the local user ``griffon``; stopped and deleted on exit. PostgreSQL
refuses to run as root: as root the server runs as the ``postgres`` system user (``runuser``).
Raises `PostgresUnavailable` with the reason when the machine cannot start one (no binaries...).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.service_server import free_port

USER = "griffon"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here (the message says why)."""


def pg_bindir() -> Path:
    """The folder of ``initdb`` and ``pg_ctl`` (Debian keeps them out of PATH)."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not candidates:
        raise PostgresUnavailable("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    return Path(candidates[-1]).parent


def _as_server_user() -> tuple[list[str], int | None]:
    if os.geteuid() != 0:
        return [], None
    try:
        uid = pwd.getpwnam("postgres").pw_uid
    except KeyError:
        raise PostgresUnavailable("running as root, and no 'postgres' user to run the server") from None
    return ["runuser", "-u", "postgres", "--"], uid


@contextmanager
def running_postgres(durable: bool = False) -> Iterator[str]:
    """A fresh server; yields its URL. `durable=False` turns fsync off (tests); True keeps the
    defaults (benchmarks measure real commits)."""
    bindir = pg_bindir()
    prefix, uid = _as_server_user()
    root = Path(tempfile.mkdtemp(prefix="griffon-pg-"))
    if uid is not None:
        os.chown(root, uid, -1)
    port = free_port()
    data, log = root / "data", root / "server.log"
    settings = f"-p {port} -k {root} -c listen_addresses=127.0.0.1"
    if not durable:
        settings += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    try:
        _run([*prefix, str(bindir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8",
              "--no-sync", "--no-instructions"], "initdb")
        _run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-o", settings, "-l", str(log), "-w",
              "-t", "30", "start"], "pg_ctl start", log)
        try:
            yield f"postgresql://{USER}@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                           capture_output=True, timeout=60)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(command: list[str], what: str, log: Path | None = None) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PostgresUnavailable(f"{what} failed: {error}") from None
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-600:] if log is not None and log.exists() else ""
        raise PostgresUnavailable(f"{what} failed: {(done.stderr or done.stdout).strip()[-600:]} {tail}")
