"""A release build on a real Celery worker process, killed halfway (issue 15, "Bad input and faults").

The build is dispatched through the real service (`release_build_later`, from a `manage.py shell`
process, so it goes to the private Redis broker). A PostgreSQL trigger, installed by the test only,
makes the progress UPDATE that starts the `jsonl_tsv` step sleep: the worker then hangs inside the
build with data/, images/ and CHANGELOG.md already written under `.building-<name>-<version>`.
The worker's process group is SIGKILLed there. Nothing half-built is visible (no release folder, no
archive, the row is not built, the audit chain verifies); a fresh worker takes the redelivered task
(acks late) and finishes it; the result verifies and is byte-identical to an uninterrupted build.
No test hook lives in the production code.

Temp entries are hidden (dot names) beside the release: `.building-<name>-<version>` (the folder being
written) and `.rows-<name>-<version>` (the rows spooled to disk). Both have fixed names: the rerun wipes what
the killed build left, and when it is done no hidden entry remains.
"""
from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

import pytest
from django.db import connection

from accounts.roles import Role
from audit.models import AuditEvent
from audit.services import audit_verify
from releases.contents import release_snapshot
from releases.models import Release
from releases.package.build import build_release
from releases.package.files import generate_signing_key, verify_release
from releases.services import release_create, signing_key
from tests.procs import PrivateRedis as Redis

from ..workers.conftest import eval_content  # noqa: F401  (fixture)
from ..workers.test_eval_worker import Workers, _wait

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

HANG_STEP = "jsonl_tsv"      # after data, images and changelog: the temp folder is half written
SLEEP_S = 120                 # longer than the test needs; the backend is terminated long before


@pytest.fixture
def admin(make_user):
    return make_user(Role.ADMIN)


@pytest.fixture
def signed(settings, tmp_path):
    settings.MEDR2_RELEASE_SIGNING_KEY = generate_signing_key()
    settings.MEDR2_RELEASE_ROOT = tmp_path / "releases"
    return settings


@pytest.fixture
def draft(eval_content, admin, signed):  # noqa: F811
    eval_content(images=3, kinds=["misleading_hint", "option_permutation", "wrong_visual_cue"])
    return release_create(actor=admin, version="1.0.0")


@pytest.fixture
def broker(tmp_path):
    if connection.vendor != "postgresql":
        pytest.fail("worker tests need PostgreSQL: run them through `make test`")
    (tmp_path / "redis").mkdir()
    server = Redis(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def pool(broker, storage_root, signed, tmp_path):
    """Worker processes with the test's storage, release root and signing key (all read from the environment)."""
    logdir = tmp_path / "logs"
    logdir.mkdir()
    workers = Workers(broker, storage_root, logdir)
    workers.env.update(MEDR2_RELEASE_SIGNING_KEY=signed.MEDR2_RELEASE_SIGNING_KEY,
                       MEDR2_RELEASE_ROOT=str(signed.MEDR2_RELEASE_ROOT))
    yield workers
    workers.stop_all()


def _sleeping_backends() -> list[int]:
    with connection.cursor() as cur:
        cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep' "
                    "AND pid <> pg_backend_pid()")
        return [pid for (pid,) in cur.fetchall()]


def _terminate_sleepers() -> None:
    with connection.cursor() as cur:
        for pid in _sleeping_backends():
            cur.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 20
    while _sleeping_backends() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _sleeping_backends(), "a sleeping backend survived pg_terminate_backend"


@pytest.fixture
def hang(transactional_db, pool):
    """Install the trigger that stalls the build at HANG_STEP; `hang.release()` removes it. Set up after the
    workers and the database, so torn down before them: no sleeper is left to block the flush."""
    table = Release._meta.db_table

    class Hang:
        installed = False

        def install(self) -> None:
            with connection.cursor() as cur:
                cur.execute(f"""
                    CREATE OR REPLACE FUNCTION medr2_test_release_hang() RETURNS trigger AS $$
                    BEGIN
                        IF NEW.progress->>'step' = '{HANG_STEP}' THEN PERFORM pg_sleep({SLEEP_S}); END IF;
                        RETURN NEW;
                    END $$ LANGUAGE plpgsql""")
                cur.execute(f"CREATE TRIGGER medr2_test_release_hang BEFORE UPDATE ON {table} "
                            "FOR EACH ROW EXECUTE FUNCTION medr2_test_release_hang()")
            self.installed = True

        def release(self) -> None:
            """Terminate the sleeping backend (it holds the row lock), then drop the trigger."""
            _terminate_sleepers()
            with connection.cursor() as cur:
                cur.execute("SET lock_timeout = '20s'")
                cur.execute(f"DROP TRIGGER IF EXISTS medr2_test_release_hang ON {table}")
                cur.execute("DROP FUNCTION IF EXISTS medr2_test_release_hang()")
                cur.execute("SET lock_timeout = DEFAULT")
            self.installed = False

    stall = Hang()
    yield stall
    if stall.installed:
        stall.release()


def _visible(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if not p.name.startswith("."))


def _hidden(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("."))


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _side_processes(folder: Path) -> list[int]:
    """Live processes running the release's side writers into `folder` (releases/package/side.py)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            state = next(line for line in (proc / "status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if b"releases.package.side" in cmdline and str(folder).encode() in cmdline and "zombie" not in state:
            found.append(int(proc.name))
    return found


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_build_killed_halfway_leaves_nothing_visible_and_the_redelivered_one_is_byte_identical(
        draft, admin, signed, pool, hang, tmp_path):
    root = Path(signed.MEDR2_RELEASE_ROOT)
    name = f"{draft.name}-{draft.version}"
    building = root / f".building-{name}"
    hang.install()

    first = pool.start()
    queued = pool.manage("shell", "-c", (
        "from django.contrib.auth import get_user_model\n"
        "from releases.models import Release\n"
        "from releases.services import release_build_later\n"
        f"release_build_later(release=Release.objects.get(pk={draft.pk}), "
        f"actor=get_user_model().objects.get(pk={admin.pk}))\n"), timeout=120)
    assert queued.returncode == 0, queued.stdout + queued.stderr

    # the worker is inside the build, stalled at the start of the JSONL + TSV step (whose side process, started
    # with the build, writes beside the data writer: it may or may not have finished)
    _wait(lambda: bool(_sleeping_backends()), 90, f"the build to reach {HANG_STEP!r}", pool)
    assert first.poll() is None
    assert (building / "data").is_dir() and any((building / "images").iterdir())
    assert (building / "CHANGELOG.md").is_file() and not (building / "croissant.json").exists()

    pool.kill(first)          # SIGKILL of the whole process group, mid-build
    _wait(lambda: not _side_processes(building), 30, "no side writer left writing into the killed build", pool)
    hang.release()            # the orphaned backend still holds the row lock; then the trigger goes

    # nothing half-built is visible: only hidden temp entries, the half-written folder among them (which proves
    # the build died mid-way)
    assert _visible(root) == [] and building.is_dir()
    assert not (root / name).exists() and not (root / f"{name}.tar.gz").exists()
    hidden_at_kill = set(_hidden(root))
    release = Release.objects.get(pk=draft.pk)
    assert release.status == Release.Status.BUILDING and not release.digest and not release.archive_sha256
    assert release.progress["step"] == "changelog"      # the last progress the killed build committed
    assert not AuditEvent.objects.filter(action="releases.release.build", object_id=str(draft.pk)).exists()
    assert audit_verify().ok

    # a fresh worker gets the redelivered task (acks late, visibility timeout) and finishes it
    pool.start()
    _wait(lambda: Release.objects.get(pk=draft.pk).status != Release.Status.BUILDING, 120,
          "the redelivered build to finish", pool)
    release = Release.objects.get(pk=draft.pk)
    assert release.status == Release.Status.BUILT, release.error + "\n" + pool.logs()
    # the very task the killed worker had received, redelivered to the new one
    task_id = re.search(r"releases\.build\[([0-9a-f-]+)\] received", (pool.logdir / "worker-0.log").read_text())
    assert task_id, pool.logs()
    # the worker's main process logs the success after the task's transaction has committed (it hears of it from
    # the pool process), so the status can change a moment before the line is written
    _wait(lambda: f"releases.build[{task_id[1]}] succeeded" in (pool.logdir / "worker-1.log").read_text(), 30,
          "the new worker to log the redelivered task's success", pool)
    folder, archive = root / release.folder, root / f"{name}.tar.gz"
    assert folder == root / name
    assert _visible(root) == sorted([name, archive.name]) and not building.exists()
    # the rerun wiped what the killed run left (its half-written folder and its row spool) and left nothing
    assert any(h.startswith(".rows-") for h in hidden_at_kill), hidden_at_kill
    assert any(h.startswith(".side-") for h in hidden_at_kill), hidden_at_kill      # the side process's job
    assert _hidden(root) == [], _hidden(root)
    for path in (folder, archive):
        verified = verify_release(path, public_key_hex=release.public_key)
        assert verified.ok, verified.first_mismatch
        assert verified.digest == release.digest
    assert _sha(archive.read_bytes()) == release.archive_sha256
    assert archive.stat().st_size == release.archive_bytes
    assert AuditEvent.objects.filter(action="releases.release.build", object_id=str(draft.pk)).count() == 1
    assert audit_verify().ok

    # byte-identical to an uninterrupted build of the same release
    reference = build_release(release_snapshot(release=release), tmp_path / "reference" / name,
                              signing_key=signing_key())
    assert reference.digest == release.digest
    assert reference.archive.read_bytes() == archive.read_bytes()
    built, expected = _tree(folder), _tree(reference.folder)
    assert sorted(built) == sorted(expected)
    assert [path for path in expected if built[path] != expected[path]] == []
