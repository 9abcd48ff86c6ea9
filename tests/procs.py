"""Real processes for the tests that start Celery workers: a private redis-server on a free port
(append-only file, so a restart keeps the queue, as a production Redis does) and the test database's
URL for the subprocesses."""
from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from django.db import connection


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url() -> str:
    """The test database (PostgreSQL), as DATABASE_URL for a worker or `manage.py` subprocess."""
    s = connection.settings_dict
    return f"postgres://{s['USER'] or 'postgres'}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class PrivateRedis:
    """A redis-server of the test's own, in `workdir`; `stop()` and `start()` again keep its queues."""

    def __init__(self, workdir: Path):
        self.port, self.dir = free_port(), workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir), "--save", "",
             "--appendonly", "yes", "--appendfsync", "always"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("private redis-server did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def purge_queue(queue: str = "cpu") -> None:
    """Empty a queue of the test broker (the broker losing every message in it)."""
    from celery import current_app

    with current_app.connection_for_write() as conn:
        channel = conn.channel()
        try:
            channel.queue_purge(queue)
        except Exception:   # noqa: BLE001 - an empty Redis queue does not exist
            pass
        channel.close()
