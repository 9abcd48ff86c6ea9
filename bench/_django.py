"""Shared set-up for the benchmarks: a fresh database (SQLite in a temp dir, or PostgreSQL
database `medr2_bench` or the one named, dropped and recreated), migrated, with Django configured."""
from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def setup_django(tmp: Path, postgres: bool, broker: str | None = None, database: str = "medr2_bench") -> str:
    # Never DEBUG: Django would keep the text of every query in memory (connection.queries),
    # which inflates both time and peak RSS of bulk inserts.
    os.environ["MEDR2_DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", "medr2-benchmark-only")
    os.environ["MEDR2_VAR_DIR"] = str(tmp / "var")
    os.environ.pop("CELERY_BROKER_URL", None)
    if broker:  # real Celery workers: tasks go through this broker, never run eagerly
        os.environ["CELERY_BROKER_URL"] = broker
        os.environ["CELERY_TASK_ALWAYS_EAGER"] = "false"
    if postgres:
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}"')
            conn.execute(f'CREATE DATABASE "{database}"')
        os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{database}"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medr2.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return "PostgreSQL" if postgres else "SQLite"


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat: what everyone used, neighbours included."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def own_cpu() -> float:
    """CPU seconds of this process and of its children that have ended (forked helpers once joined)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def busy_cores(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Cores the whole machine kept busy on average between two `cpu_ticks` readings."""
    busy, total = after[0] - before[0], after[1] - before[1]
    return busy / max(total, 1) * (os.cpu_count() or 1)


class CpuSplit:
    """Where the machine's cores went during a `with` block: seconds, busy cores on average, CPU seconds of
    this process tree (`own_cpu`) and of everything else (the machine's busy core-seconds minus ours: the
    database server, mostly, on a quiet machine)."""

    def __enter__(self):
        self._t, self._ticks, self._own = time.perf_counter(), cpu_ticks(), own_cpu()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t
        self.busy_cores = busy_cores(self._ticks, cpu_ticks())
        self.ours = own_cpu() - self._own
        self.rest = max(0.0, self.busy_cores * self.seconds - self.ours)

    def __str__(self) -> str:
        return (f"{self.seconds:.2f} s, {self.busy_cores:.2f} cores busy: this process tree {self.ours:.2f} CPU-s, "
                f"the rest (database) {self.rest:.2f} CPU-s")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
