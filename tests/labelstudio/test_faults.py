"""Label Studio down, slow or restarted in the middle of a push or a pull: retries with backoff,
status says so, and once it is back nothing is lost and nothing is duplicated."""
from __future__ import annotations

import socket
import threading

import pytest

from annotation.models import GroundingBox
from labelstudio.client import LabelStudioClient, LabelStudioUnavailable
from labelstudio.models import AnnotationBatch, LabelStudioAnnotation, SyncLogEntry
from labelstudio.server import from_template
from labelstudio.services import batch_create, batch_push, batch_sync, pull as service

from .test_sync import rect

pytestmark = [pytest.mark.django_db, pytest.mark.labelstudio]


@pytest.fixture(scope="module")
def restartable(ls_template, tmp_path_factory):
    """A Label Studio of our own that the tests stop and start again (same data, same port)."""
    server = from_template(ls_template, tmp_path_factory.mktemp("ls-restartable"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own(settings, restartable):
    if not restartable.healthy():
        restartable.start()
    settings.LABEL_STUDIO_URL = restartable.url
    settings.LABEL_STUDIO_API_KEY = restartable.api_key
    settings.LABEL_STUDIO_WEBHOOK_SECRET = ""
    settings.LABEL_STUDIO_TIMEOUT_S = 10
    client = LabelStudioClient(url=restartable.url, api_key=restartable.api_key)
    yield restartable, client
    client.close()
    if not restartable.healthy():
        restartable.start()


def _rad(server, n):
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=server.url, api_key=str(n) * 40)


def test_label_studio_stopped_and_restarted_in_the_middle_of_a_sync_loses_nothing(own, phantom_images, monkeypatch,
                                                                                  radiologists):
    server, client = own
    images = phantom_images(3)
    batch = batch_create(per_reader=False, name="restart mid-sync", images=images, actor=None)
    batch_push(batch=batch, client=client)
    tasks = list(batch.tasks.order_by("pk"))
    for n, task in enumerate(tasks):
        image = task.image
        _rad(server, 1 + n % 2).annotations.create(
            id=task.ls_task_id, result=rect(f"r{n}", "cyst", (10 + n, 10, 60, 70), (image.width, image.height)))

    applied = []
    original = service.apply_ls_task

    def stop_after_first(**kwargs):
        result = original(**kwargs)
        applied.append(kwargs["ls_task"]["id"])
        if len(applied) == 1:
            server.stop()          # Label Studio goes away while the pull is under way
        return result

    monkeypatch.setattr(service, "apply_ls_task", stop_after_first)
    monkeypatch.setattr(client, "iter_tasks", _one_per_page(client))
    with pytest.raises(LabelStudioUnavailable):
        batch_sync(batch=batch, client=client)
    batch.refresh_from_db()
    assert batch.last_sync_ok is False and "unreachable" in batch.last_sync_error
    assert batch.synced_until is None, "the cursor did not move: the next pass starts from the same point"
    assert SyncLogEntry.objects.filter(batch=batch, code="unavailable").exists()
    assert LabelStudioAnnotation.objects.count() == 1

    server.start()
    monkeypatch.setattr(service, "apply_ls_task", original)
    result = batch_sync(batch=batch, client=client)
    assert result.annotations_created == 2 and result.unchanged == 1
    assert LabelStudioAnnotation.objects.count() == 3
    assert GroundingBox.objects.filter(source="label_studio", status="active").count() == 3
    batch.refresh_from_db()
    assert batch.last_sync_ok and batch.synced_until is not None


def _one_per_page(client):
    original = client.iter_tasks

    def iter_tasks(project_id, **kwargs):
        return original(project_id, **{**kwargs, "page_size": 1})

    return iter_tasks


def test_push_interrupted_between_chunks_resumes_without_duplicate_tasks(own, phantom_images, settings, monkeypatch):
    server, client = own
    settings.LABEL_STUDIO_PUSH_CHUNK = 2
    batch = batch_create(per_reader=False, name="interrupted push", images=phantom_images(5), actor=None)
    original = client.import_tasks
    calls = []

    def import_then_die(project_id, tasks):
        ids = original(project_id, tasks)
        calls.append(len(tasks))
        if len(calls) == 2:
            server.stop()       # the second chunk landed in Label Studio, but its answer never reached us
            raise LabelStudioUnavailable("import tasks: connection lost")
        return ids

    monkeypatch.setattr(client, "import_tasks", import_then_die)
    with pytest.raises(LabelStudioUnavailable):
        batch_push(batch=batch, client=client)
    batch.refresh_from_db()
    assert batch.status == "retrying" and "connection lost" in batch.push_error
    assert batch.tasks.filter(ls_task_id__isnull=False).count() == 2

    server.start()
    monkeypatch.setattr(client, "import_tasks", original)
    result = batch_push(batch=batch, client=client)
    assert (result.recovered, result.created) == (2, 1)
    batch.refresh_from_db()
    assert batch.status == "pushed"
    ls_ids = sorted(t["id"] for t in client.iter_tasks(batch.ls_project_id, fields="task_only"))
    assert ls_ids == sorted(batch.tasks.values_list("ls_task_id", flat=True)), "5 tasks, none twice"


@pytest.fixture
def silent_port():
    """A port that accepts connections and never answers: a hung Label Studio."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(sock.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield sock.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    sock.close()


def test_a_slow_label_studio_times_out_and_the_push_task_retries_then_reports(settings, silent_port, wide_image,
                                                                             eager_celery):
    from labelstudio.tasks import push_batch

    settings.LABEL_STUDIO_URL = f"http://127.0.0.1:{silent_port}"
    settings.LABEL_STUDIO_API_KEY = "k" * 40
    settings.LABEL_STUDIO_TIMEOUT_S = 0.3
    settings.LABEL_STUDIO_MAX_RETRIES = 2
    settings.LABEL_STUDIO_RETRY_BASE_S = 0.0
    eager_celery.conf.task_eager_propagates = False   # let apply() chain the retries, as a worker would
    batch = batch_create(per_reader=False, name="slow", images=[wide_image], actor=None)
    push_batch.apply(args=[batch.pk])
    batch.refresh_from_db()
    assert batch.status == "failed" and batch.push_attempts == 3
    assert "timed out" in batch.push_error
    assert SyncLogEntry.objects.filter(batch=batch, code="gave_up").exists()
    assert SyncLogEntry.objects.filter(batch=batch, code="unavailable").count() == 3


def test_label_studio_down_leaves_the_reconciliation_cursor_alone(settings, wide_image):
    from labelstudio.services import reconcile_all

    settings.LABEL_STUDIO_URL = "http://127.0.0.1:9"       # nothing listens on the discard port
    settings.LABEL_STUDIO_API_KEY = "k" * 40
    batch = batch_create(per_reader=False, name="down", images=[wide_image], actor=None)
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=31337)
    summary = reconcile_all()
    assert summary["unavailable"] is True
    batch.refresh_from_db()
    assert batch.synced_until is None and batch.last_sync_ok is False
