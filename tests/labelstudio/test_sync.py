"""Push and pull against a real Label Studio server: projects, tasks with pre-annotations,
annotations by several radiologists, exact pixel boxes, rejections, changes, deletions, reconciliation."""
from __future__ import annotations

import pytest

from annotation.models import Finding, GroundingBox
from audit.models import AuditEvent
from labelstudio.convert import pixels_to_percent
from labelstudio.models import AnnotationTask, AnnotatorDisagreement, LabelStudioAnnotation, SyncLogEntry
from labelstudio.services import batch_create, batch_push, batch_sync, tasks_sync

pytestmark = [pytest.mark.django_db, pytest.mark.labelstudio]


def rect(rid, label, box, size, control="findings", **attributes):
    width, height = size
    value = pixels_to_percent(box, width=width, height=height)
    out = [{"id": rid, "from_name": control, "to_name": "image", "type": "rectanglelabels",
            "original_width": width, "original_height": height, "image_rotation": 0,
            "value": {**value, "rectanglelabels": [label]}}]
    for name, choice in attributes.items():
        out.append({"id": rid, "from_name": name, "to_name": "image", "type": "choices", "original_width": width,
                    "original_height": height, "image_rotation": 0, "value": {**value, "choices": [choice]}})
    return out


@pytest.fixture
def pushed(ls_settings, ls_admin, wide_image, phantom_images, radiologists, curator):
    (phantom,) = phantom_images(1)
    batch = batch_create(per_reader=False, name="edge boxes", images=[wide_image, phantom], maximum_annotations=2,
                         readers=radiologists[:2], actor=curator)
    batch_push(batch=batch, actor=curator, client=ls_admin)
    batch.refresh_from_db()
    tasks = {t.image_id: t for t in batch.tasks.all()}
    return {"batch": batch, "wide": tasks[wide_image.pk], "phantom": tasks[phantom.pk], "phantom_image": phantom}


def test_push_creates_project_config_tasks_and_pre_annotations(pushed, ls_admin):
    batch = pushed["batch"]
    assert batch.status == "pushed" and batch.ls_project_id
    project = ls_admin.sdk.projects.get(id=batch.ls_project_id)
    assert project.maximum_annotations == 2
    assert project.show_collab_predictions is False, "annotators read blind: pre-annotations are not shown to them"
    config = project.label_config
    for control in ('RectangleLabels name="findings"', 'RectangleLabels name="anatomy"', 'name="shape"',
                    'perRegion="true"', 'name="margin"', 'TextArea name="rationale"'):
        assert control in config
    ls_tasks = list(ls_admin.iter_tasks(batch.ls_project_id))
    assert sorted(t["id"] for t in ls_tasks) == sorted(AnnotationTask.objects.values_list("ls_task_id", flat=True))
    phantom_task = next(t for t in ls_tasks if t["id"] == pushed["phantom"].ls_task_id)
    assert phantom_task["data"]["medr2_task_id"] == pushed["phantom"].pk
    assert "/ls/images/" in phantom_task["data"]["image"]
    assert ls_admin.get_task(phantom_task["id"])["predictions"] == [], "an independent read gets no pre-annotation"
    # the push is idempotent: nothing is imported twice
    again = batch_push(batch=batch, actor=None, client=ls_admin)
    assert again.created == 0
    assert len(list(ls_admin.iter_tasks(batch.ls_project_id, fields="task_only"))) == 2
    assert AuditEvent.objects.filter(action="labelstudio.batch.push").count() == 2


def test_two_radiologists_boxes_at_the_edges_come_back_as_exact_pixels(pushed, ls_admin, as_radiologist, radiologists):
    batch, task = pushed["batch"], pushed["wide"]
    size = (300, 217)
    rad1, rad2 = as_radiologist[:2]
    # boxes touching all four edges of a non-square image
    rad1.annotations.create(id=task.ls_task_id, lead_time=12.5, result=[
        *rect("a", "nodule", (0, 0, 37, 41), size, shape="round", margin="well-defined"),
        *rect("b", "cyst", (263, 176, 300, 217), size, shape="oval"),
        *rect("c", "liver", (101, 3, 250, 120), size, control="anatomy")])
    rad2.annotations.create(id=task.ls_task_id, lead_time=8.0, result=[
        *rect("x", "nodule", (1, 0, 37, 40), size, shape="lobulated", margin="well-defined"),
        *rect("y", "cyst", (263, 176, 300, 217), size, shape="oval")])

    result = batch_sync(batch=batch, client=ls_admin)
    assert (result.annotations_created, result.rejected_regions) == (2, 0)

    active = GroundingBox.objects.filter(source="label_studio", status="active")
    boxes = {(b.author.username, b.label): b for b in active}
    assert boxes[("rad1", "nodule")].xyxy == (0.0, 0.0, 37.0, 41.0)
    assert boxes[("rad1", "cyst")].xyxy == (263.0, 176.0, 300.0, 217.0)
    assert boxes[("rad2", "nodule")].xyxy == (1.0, 0.0, 37.0, 40.0)
    assert boxes[("rad1", "liver")].finding.kind == Finding.Kind.ANATOMY
    assert boxes[("rad1", "nodule")].finding.attributes == {"shape": "round", "margin": "well-defined"}
    assert boxes[("rad1", "nodule")].ls_task_id == str(task.ls_task_id)

    task.refresh_from_db()
    assert task.status == "done" and task.n_annotations == 2
    assert task.agreement["n_annotators"] == 2
    assert 0 < task.agreement["box_f1"] < 1     # rad2 drew no liver
    assert task.has_disagreement
    disagreement = AnnotatorDisagreement.objects.get(task=task)
    assert set(disagreement.kinds) >= {"box_unmatched", "attribute"}
    assert disagreement.annotators == [radiologists[0].pk, radiologists[1].pk]

    # syncing again duplicates nothing
    again = batch_sync(batch=batch, client=ls_admin, full=True)
    assert (again.annotations_created, again.annotations_updated) == (0, 0) and again.unchanged == 2
    assert GroundingBox.objects.filter(source="label_studio").count() == 5
    assert LabelStudioAnnotation.objects.count() == 2
    assert AnnotatorDisagreement.objects.count() == 1


def test_rotated_and_out_of_bounds_regions_are_rejected_on_the_sync_log(pushed, ls_admin, as_radiologist):
    batch, task = pushed["batch"], pushed["wide"]
    good = rect("ok", "nodule", (10, 10, 50, 50), (300, 217))
    rotated = rect("rot", "cyst", (100, 100, 140, 140), (300, 217))
    rotated[0]["value"]["rotation"] = 30
    outside = rect("out", "mass", (280, 200, 300, 217), (300, 217))
    outside[0]["value"]["width"] = 12.0      # 280 + 36 px > 300: beyond the right edge
    as_radiologist[0].annotations.create(id=task.ls_task_id, result=good + rotated + outside)

    result = batch_sync(batch=batch, client=ls_admin)
    assert result.rejected_regions == 2
    assert list(GroundingBox.objects.filter(source="label_studio").values_list("label", flat=True)) == ["nodule"]
    errors = {e.code: e for e in SyncLogEntry.objects.filter(batch=batch, level="error")}
    assert "rotated" in errors and "out_of_bounds" in errors
    assert "outside the 300x217 image" in errors["out_of_bounds"].message
    assert errors["out_of_bounds"].ls_task_id == task.ls_task_id
    row = LabelStudioAnnotation.objects.get()
    assert (row.n_regions, row.n_rejected) == (1, 2)


def test_changed_and_deleted_annotations_retire_their_boxes(pushed, ls_admin, as_radiologist):
    batch, task = pushed["batch"], pushed["wide"]
    rad1 = as_radiologist[0]
    ann = rad1.annotations.create(id=task.ls_task_id, result=rect("a", "nodule", (10, 10, 50, 50), (300, 217)))
    batch_sync(batch=batch, client=ls_admin)
    first = GroundingBox.objects.get(source="label_studio")

    rad1.annotations.update(id=ann.id, result=rect("a", "nodule", (12, 10, 52, 50), (300, 217)))
    tasks_sync(ls_task_ids=[task.ls_task_id], client=ls_admin)
    first.refresh_from_db()
    assert first.status == "retired" and first.finding.status == "retired"
    current = GroundingBox.objects.get(source="label_studio", status="active")
    assert current.xyxy == (12.0, 10.0, 52.0, 50.0)
    assert LabelStudioAnnotation.objects.get().revision == 2

    rad1.annotations.delete(id=ann.id)
    tasks_sync(ls_task_ids=[task.ls_task_id], client=ls_admin)
    assert not GroundingBox.objects.filter(source="label_studio", status="active").exists()
    assert GroundingBox.objects.filter(source="label_studio").count() == 2, "retired, never deleted"
    assert LabelStudioAnnotation.objects.get().status == "retired"
    actions = list(AuditEvent.objects.filter(action__startswith="labelstudio.annotation").order_by("pk")
                   .values_list("action", flat=True))
    assert actions == [f"labelstudio.annotation.{a}" for a in ("create", "update", "retire")]


def test_reconciliation_picks_up_an_annotation_whose_webhook_was_lost(pushed, ls_admin, as_radiologist):
    """No webhook reaches us (none is configured here): the periodic pull alone finds the annotation,
    including one made after the previous pass."""
    from labelstudio.services import reconcile_all

    batch = pushed["batch"]
    assert reconcile_all(client=ls_admin)["created"] == 0
    batch.refresh_from_db()
    cursor = batch.synced_until
    image = pushed["phantom_image"]
    as_radiologist[1].annotations.create(id=pushed["phantom"].ls_task_id,
                                         result=rect("p", "cyst", (100, 100, 140, 150), (image.width, image.height)))
    summary = reconcile_all(client=ls_admin)
    assert summary["created"] == 1 and not summary["unavailable"]
    batch.refresh_from_db()
    assert batch.synced_until > cursor and batch.last_sync_ok
    box = GroundingBox.objects.get(source="label_studio")
    assert box.author.username == "rad2" and box.image_id == pushed["phantom_image"].pk


def test_skipped_task_and_unmapped_user(pushed, ls_admin, as_radiologist, radiologists):
    batch, task = pushed["batch"], pushed["wide"]
    radiologists[0].email = "someone-else@example.org"
    radiologists[0].save()
    as_radiologist[0].annotations.create(id=task.ls_task_id, result=rect("a", "nodule", (10, 10, 50, 50), (300, 217)))
    as_radiologist[1].annotations.create(id=task.ls_task_id, result=[], was_cancelled=True)
    batch_sync(batch=batch, client=ls_admin)
    rows = {r.ls_user_email: r for r in LabelStudioAnnotation.objects.all()}
    assert rows["rad1@medr2.test"].author is None, "no Med-R2 account with that email"
    assert rows["rad2@medr2.test"].was_cancelled and rows["rad2@medr2.test"].author == radiologists[1]
    assert SyncLogEntry.objects.filter(batch=batch, code="unmapped_user").exists()
    box = GroundingBox.objects.get(source="label_studio")
    assert box.author is None
    task.refresh_from_db()
    assert task.n_annotations == 1, "a skipped task is not an annotation"


def test_disagreement_resolves_when_an_annotator_corrects_their_box(pushed, ls_admin, as_radiologist):
    batch, task = pushed["batch"], pushed["wide"]
    size = (300, 217)
    as_radiologist[0].annotations.create(id=task.ls_task_id, result=rect("a", "nodule", (10, 10, 60, 60), size))
    second = as_radiologist[1].annotations.create(id=task.ls_task_id, result=rect("b", "cyst", (10, 10, 60, 60), size))
    batch_sync(batch=batch, client=ls_admin)
    disagreement = AnnotatorDisagreement.objects.get(task=task)
    assert disagreement.status == "open" and disagreement.kinds == ["box_label"]

    as_radiologist[1].annotations.update(id=second.id, result=rect("b", "nodule", (11, 10, 60, 60), size))
    tasks_sync(ls_task_ids=[task.ls_task_id], client=ls_admin)
    disagreement.refresh_from_db()
    assert disagreement.status == "resolved"
    events = AuditEvent.objects.filter(action__startswith="labelstudio.disagreement")
    actions = set(events.values_list("action", flat=True))
    assert actions == {"labelstudio.disagreement.open", "labelstudio.disagreement.resolve"}


def test_reconciliation_re_signs_image_links_before_they_expire(pushed, ls_admin):
    from datetime import timedelta

    from django.utils import timezone

    from labelstudio.models import AnnotationBatch
    from labelstudio.services import reconcile_all

    batch = pushed["batch"]
    AnnotationBatch.objects.filter(pk=batch.pk).update(urls_expire_at=timezone.now() + timedelta(hours=1))
    summary = reconcile_all(client=ls_admin)
    assert summary["refreshed"] == 2
    batch.refresh_from_db()
    assert batch.urls_expire_at > timezone.now() + timedelta(days=13)
    assert AuditEvent.objects.filter(action="labelstudio.batch.refresh_urls").count() == 1
    assert "/ls/images/" in ls_admin.get_task(pushed["wide"].ls_task_id)["data"]["image"]


def test_a_new_label_in_the_taxonomy_updates_the_project_config_on_the_next_push(pushed, ls_admin):
    from annotation.services.findings import finding_create

    batch = pushed["batch"]
    before = batch.label_config_hash
    finding_create(image=pushed["phantom_image"], kind="lesion", label="pseudocyst", actor=None, source="manual",
                   box=(5, 5, 20, 20))
    batch_push(batch=batch, client=ls_admin)
    batch.refresh_from_db()
    assert batch.label_config_hash != before
    assert 'value="pseudocyst"' in ls_admin.sdk.projects.get(id=batch.ls_project_id).label_config
    assert AuditEvent.objects.filter(action="labelstudio.project.update", object_id=str(batch.pk)).exists()
