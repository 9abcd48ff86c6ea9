"""Smaller Label Studio defects, each pinned: a sync that cannot reach Label Studio fails loudly, a deleted
dissenting annotation withdraws (never resolves) a disagreement, the batch κ pools judgments, a rejected
region is visible to agreement and the curator, and concurrent pulls of one edited annotation apply it once."""
from __future__ import annotations

import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotation.models import GroundingBox
from audit.models import AuditEvent
from labelstudio.agreement import cohen_kappa
from labelstudio.models import AnnotationBatch, AnnotationTask, AnnotatorDisagreement, LabelStudioAnnotation
from labelstudio.selectors import batch_agreement_summary
from labelstudio.services import UserMap, apply_ls_task, batch_create

from .test_sync import rect

SIZE = (300, 217)


def shared_task(wide_image, curator, ls_task_id=701):
    batch = batch_create(per_reader=False, name="defects", images=[wide_image], maximum_annotations=2, actor=curator)
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=ls_task_id + 1000)
    AnnotationTask.objects.filter(batch=batch).update(ls_task_id=ls_task_id)
    batch.refresh_from_db()
    return batch, batch.tasks.get()


def annotation(ann_id, user, result):
    return {"id": ann_id, "result": result, "completed_by": {"id": ann_id, "email": user.email}}


@pytest.mark.django_db
def test_labelstudio_sync_fails_when_label_studio_is_down(settings, wide_image, curator):
    settings.LABEL_STUDIO_URL = "http://127.0.0.1:9"       # nothing listens on the discard port
    settings.LABEL_STUDIO_API_KEY = "k" * 40
    shared_task(wide_image, curator)
    with pytest.raises(CommandError, match="Label Studio is unavailable"):
        call_command("labelstudio_sync")


@pytest.mark.django_db
def test_deleting_the_dissenting_annotation_withdraws_the_disagreement(wide_image, curator, make_user):
    from accounts.roles import Role

    a, b = make_user(Role.ANNOTATOR), make_user(Role.ANNOTATOR)
    batch, task = shared_task(wide_image, curator)
    users = UserMap(client=None)
    both = [annotation(1, a, rect("x", "nodule", (10, 10, 60, 60), SIZE)),
            annotation(2, b, rect("y", "cyst", (10, 10, 60, 60), SIZE))]
    apply_ls_task(batch=batch, ls_task={"id": 701, "annotations": both}, users=users)
    assert AnnotatorDisagreement.objects.get(task=task).status == "open"
    apply_ls_task(batch=batch, ls_task={"id": 701, "annotations": both[:1]}, users=users)   # b's deleted
    disagreement = AnnotatorDisagreement.objects.get(task=task)
    assert disagreement.status == "withdrawn", "nobody came to agree: one side is gone"
    assert AuditEvent.objects.filter(action="labelstudio.disagreement.withdraw").count() == 1
    assert not AuditEvent.objects.filter(action="labelstudio.disagreement.resolve").exists()


@pytest.mark.django_db
def test_batch_kappa_pools_judgments_instead_of_averaging_tasks(wide_image, phantom_images, curator, make_user):
    from accounts.roles import Role

    a, b = make_user(Role.ANNOTATOR), make_user(Role.ANNOTATOR)
    images = [wide_image, *phantom_images(2)]
    batch = batch_create(per_reader=False, name="kappa", images=images, maximum_annotations=2, actor=curator)
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=4242)
    tasks = list(batch.tasks.order_by("pk"))
    for n, task in enumerate(tasks):
        AnnotationTask.objects.filter(pk=task.pk).update(ls_task_id=900 + n)
    users = UserMap(client=None)
    # task 0: one identical judgment (per-task κ = 1); tasks 1 and 2: the shape disagrees
    shapes = [("round", "round"), ("round", "oval"), ("oval", "round")]
    for n, (task, (sa, sb)) in enumerate(zip(tasks, shapes, strict=True)):
        image = task.image
        size = (image.width, image.height)
        apply_ls_task(batch=batch, ls_task={"id": 900 + n, "annotations": [
            annotation(10 * n + 1, a, rect("p", "nodule", (2, 2, 20, 20), size, shape=sa)),
            annotation(10 * n + 2, b, rect("q", "nodule", (2, 2, 20, 20), size, shape=sb))]}, users=users)
    summary = batch_agreement_summary(batch=batch)
    pooled = cohen_kappa(["round", "round", "oval"], ["round", "oval", "round"])
    assert summary["judgments"] == 3
    assert summary["kappa"] == pytest.approx(pooled)
    per_task = [t.agreement["kappa"] for t in AnnotationTask.objects.filter(batch=batch)]
    assert summary["kappa"] != pytest.approx(sum(per_task) / len(per_task))


@pytest.mark.django_db
def test_a_region_rejected_as_out_of_bounds_reaches_agreement_and_the_task_page(wide_image, curator, make_user):
    from accounts.roles import Role

    a = make_user(Role.ANNOTATOR)
    batch, task = shared_task(wide_image, curator)
    outside = [{"id": "o", "from_name": "findings", "to_name": "image", "type": "rectanglelabels",   # 10 px past
                "original_width": 300, "original_height": 217, "image_rotation": 0,             # the right edge
                "value": {"x": 250 / 3, "y": 0.0, "width": 20.0, "height": 50.0, "rotation": 0,
                          "rectanglelabels": ["nodule"]}}]
    apply_ls_task(batch=batch, ls_task={"id": 701, "annotations": [annotation(5, a, outside)]},
                  users=UserMap(client=None))
    task.refresh_from_db()
    row = LabelStudioAnnotation.objects.get(ls_annotation_id=5)
    assert [r["code"] for r in row.rejections] == ["out_of_bounds"]
    assert task.has_disagreement
    assert AnnotatorDisagreement.objects.get(task=task).kinds == ["region_rejected"]
    client = Client()
    client.force_login(curator)
    page = client.get(reverse("labelstudio:task-detail", args=[batch.pk, task.pk])).content.decode()
    assert "rejected-regions" in page and row.rejections[0]["message"][:30] in page
    batch_page = client.get(reverse("labelstudio:batch-detail", args=[batch.pk])).content.decode()
    assert "disagreement" in batch_page


@pytest.mark.django_db(transaction=True)
def test_concurrent_pulls_of_one_edited_annotation_apply_it_once(wide_image, curator, make_user, monkeypatch):
    """A webhook hint and the beat pull the same edit at once, each in its own connection (PostgreSQL)."""
    from accounts.roles import Role
    from labelstudio.services import pull

    assert connection.vendor == "postgresql"
    a = make_user(Role.ANNOTATOR)
    batch, task = shared_task(wide_image, curator)
    first = {"id": 701, "annotations": [annotation(7, a, rect("r", "nodule", (10, 10, 60, 60), SIZE))]}
    apply_ls_task(batch=batch, ls_task=first, users=UserMap(client=None))
    edited = {"id": 701, "annotations": [annotation(7, a, rect("r", "nodule", (12, 10, 60, 60), SIZE)
                                                    + rect("s", "cyst", (100, 100, 140, 150), SIZE))]}
    slow_retire = pull._retire_boxes

    def retire_slowly(annotation_id):
        ids = slow_retire(annotation_id)
        threading.Event().wait(0.3)          # widen the window in which the other pull could interleave
        return ids

    monkeypatch.setattr(pull, "_retire_boxes", retire_slowly)
    barrier, errors, results = threading.Barrier(2), [], []

    def pull_edit():
        try:
            barrier.wait()
            results.append(apply_ls_task(batch=AnnotationBatch.objects.get(pk=batch.pk), ls_task=edited,
                                         users=UserMap(client=None)))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=pull_edit) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert sorted((r.annotations_updated, r.unchanged) for r in results) == [(0, 1), (1, 0)]
    row = LabelStudioAnnotation.objects.get(ls_annotation_id=7)
    assert row.revision == 2
    active = GroundingBox.objects.filter(ls_annotation_id="7", status="active")
    assert sorted(active.values_list("ls_result_id", flat=True)) == ["r", "s"]
    assert AuditEvent.objects.filter(action="labelstudio.annotation.update").count() == 1
