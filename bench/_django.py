"""Shared set-up for the benchmarks: a fresh database (SQLite in a temp dir, or PostgreSQL
database `medr2_bench` or the one named, dropped and recreated), migrated, with Django configured."""
from __future__ import annotations

import os
import resource
import sys
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


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
