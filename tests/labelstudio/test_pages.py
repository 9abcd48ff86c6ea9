"""Signed image links for the Label Studio editor, the worklist and batch pages, batch creation."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from labelstudio.models import AnnotationBatch, AnnotationTask, LabelStudioAnnotation, SyncLogEntry
from labelstudio.services import batch_create, image_token, image_url
from tests.workers.conftest import eval_content  # noqa: F401  (approved chains with variants)

pytestmark = pytest.mark.django_db


def test_signed_image_link_serves_the_png_with_cors(settings, wide_image):
    settings.LABEL_STUDIO_PUBLIC_URL = "http://127.0.0.1:8080"
    settings.MEDR2_PUBLIC_URL = "http://testserver"
    url = image_url(wide_image.pk)
    assert url.startswith("http://testserver/ls/images/")
    response = Client().get(url.removeprefix("http://testserver"))
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response["Access-Control-Allow-Origin"] == "http://127.0.0.1:8080"
    assert b"".join(response.streaming_content).startswith(b"\x89PNG")


def test_tampered_and_expired_image_links_are_refused(settings, wide_image):
    token = image_token(wide_image.pk)
    other = image_token(wide_image.pk + 1)
    forged = token.split(":")[0].replace(str(wide_image.pk), str(wide_image.pk + 1)) + ":" + token.split(":", 1)[1]
    assert Client().get(reverse("labelstudio:image", args=[forged])).status_code == 403
    assert Client().get(reverse("labelstudio:image", args=["garbage"])).status_code == 403
    assert Client().get(reverse("labelstudio:image", args=[other])).status_code == 404
    settings.LABEL_STUDIO_IMAGE_URL_MAX_AGE_S = -1
    assert Client().get(reverse("labelstudio:image", args=[token])).status_code == 410


def test_batch_creation_validates_and_is_audited(wide_image, curator):
    from audit.models import AuditEvent

    with pytest.raises(ValidationError, match="at least one"):
        batch_create(per_reader=False, name="empty", images=[], actor=curator)
    with pytest.raises(ValidationError, match="1 to 10"):
        batch_create(per_reader=False, name="many", images=[wide_image], maximum_annotations=11, actor=curator)
    batch = batch_create(per_reader=False, name="ok", images=[wide_image, wide_image.pk], actor=curator)
    assert batch.tasks.count() == 1, "an image is asked for once"
    assert AuditEvent.objects.filter(action="labelstudio.batch.create", object_id=str(batch.pk)).exists()


def test_qa_batch_has_one_task_per_item_and_the_answer_control(eval_content, curator):  # noqa: F811
    from annotation.models import QAItem
    from labelstudio.services import batch_label_config, task_payloads

    eval_content(images=4, kinds=[])
    items = list(QAItem.objects.filter(is_current=True, category__answer_type="single_choice")[:3])
    assert items, "the phantoms give single-choice items"
    batch = batch_create(per_reader=False, name="qa", qa_items=items, maximum_annotations=2, actor=curator)
    assert batch.with_qa and batch.tasks.count() == len(items)
    config = batch_label_config(batch)
    assert 'Choices name="answer" toName="image" value="$options"' in config
    payload = task_payloads(list(batch.tasks.select_related("image", "qa_item")))[0]
    item = batch.tasks.first().qa_item
    assert payload["data"]["question"] == item.question
    assert [o["value"] for o in payload["data"]["options"]] == item.options
    assert any(p["model_version"] == "medr2:phantom" for p in payload["predictions"])


def test_worklist_scopes_batches_to_their_readers(users, make_user, wide_image, curator):
    from accounts.roles import Role

    reader = make_user(Role.ANNOTATOR)
    mine = batch_create(per_reader=False, name="mine", images=[wide_image], readers=[reader], actor=curator)
    batch_create(per_reader=False, name="not mine", images=[wide_image], actor=curator)
    client = Client()
    client.force_login(reader)
    page = client.get(reverse("labelstudio:worklist")).content.decode()
    assert "mine" in page and "not mine" not in page
    assert client.get(reverse("labelstudio:batch-detail", args=[mine.pk])).status_code == 200
    assert "Sync log" not in client.get(reverse("labelstudio:batch-detail", args=[mine.pk])).content.decode()
    client.force_login(curator)
    assert "not mine" in client.get(reverse("labelstudio:worklist")).content.decode()


def test_batch_page_shows_progress_agreement_links_and_the_sync_log(settings, wide_image, curator, make_user):
    from accounts.roles import Role

    settings.LABEL_STUDIO_URL = settings.LABEL_STUDIO_PUBLIC_URL = "http://ls.example:8080"
    reader = make_user(Role.ANNOTATOR)
    batch = batch_create(per_reader=False, name="shown", images=[wide_image], readers=[reader], maximum_annotations=2,
                         actor=curator)
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=12, status="pushed")
    AnnotationTask.objects.filter(batch=batch).update(ls_task_id=34, status="open", n_annotations=1)
    LabelStudioAnnotation.objects.create(task=batch.tasks.get(), ls_annotation_id=1, author=reader, result=[],
                                         result_hash="h", ls_user_email=reader.email)
    SyncLogEntry.objects.create(batch=batch, direction="pull", level="error", code="out_of_bounds",
                                message="box (1, 2, 400, 5) lies outside the 300x217 image")
    client = Client()
    client.force_login(curator)
    page = client.get(reverse("labelstudio:batch-detail", args=[batch.pk])).content.decode()
    assert "http://ls.example:8080/projects/12/data?task=34" in page
    assert "lies outside the 300x217 image" in page
    assert reader.username in page and "1 / 1" in page


def test_new_batch_form_creates_and_queues_a_push(settings, wide_image, curator, monkeypatch):
    pushed = []
    monkeypatch.setattr("labelstudio.views.push_batch_later", pushed.append)
    client = Client()
    client.force_login(curator)
    response = client.post(reverse("labelstudio:batch-create"), {
        "name": "from the form", "source": "images", "limit": 10, "maximum_annotations": 2, "push_now": "on"})
    assert response.status_code == 302
    batch = AnnotationBatch.objects.get(name="from the form")
    assert pushed == [batch.pk] and batch.tasks.count() == 1


def test_reconciliation_is_on_the_beat_schedule(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["labelstudio-reconcile"]
    assert entry["task"] == "labelstudio.reconcile" and entry["schedule"] == settings.LABEL_STUDIO_SYNC_INTERVAL_S


def test_model_predicted_boxes_go_in_as_pre_annotations_with_their_model_version(phantom_images, curator):
    """Each model's latest completed run: its box answers on the image's clean box variants become
    one pre-annotation per model; a box outside the image is left out, never clipped."""
    from annotation.chains.generator import ChainPolicy
    from annotation.models import QAItem, Variant
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate
    from labelstudio.services import task_payloads
    from workers.models import EvaluationRun, Prediction
    from workers.services.endpoints import endpoint_create
    from workers.services.runs import run_create

    (image,) = phantom_images(1)
    # every applicable category, so the chain surely has the anatomy-box question
    chains_generate(image_ids=[image.pk], actor=None, seed=0, policy=ChainPolicy(steps_per_stage=8))
    QAItem.objects.update(status=QAItem.Status.APPROVED)
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0, kinds=[])
    item = QAItem.objects.filter(is_current=True, category__answer_type="box").order_by("pk").first()
    assert item is not None, "the phantom chain has a box question"
    image = item.chain.image
    variant = Variant.objects.get(item=item, kind="clean")
    endpoints = [endpoint_create(name=n, backend="null", actor=None) for n in ("model-a", "model-b")]
    run = run_create(name="boxes", endpoints=endpoints, actor=None, split="all", start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.COMPLETED)
    common = dict(run=run, variant=variant, item=item, outcome="answered", parse_method="box_pixel")
    Prediction.objects.create(endpoint=endpoints[0], parsed=[10.0, 12.0, 60.0, 70.0], **common)
    Prediction.objects.create(endpoint=endpoints[1], parsed=[10.0, 12.0, image.width + 5.0, 70.0], **common)

    batch = batch_create(per_reader=False, name="with model boxes", images=[image], actor=curator)
    (payload,) = task_payloads(list(batch.tasks.select_related("image", "qa_item")))
    by_version = {p["model_version"]: p["result"] for p in payload["predictions"]}
    assert f"model-a (run {run.pk})" in by_version
    assert not any(v.startswith("model-b") for v in by_version), "out of the image: not shown rather than clipped"
    (region,) = by_version[f"model-a (run {run.pk})"]
    value = region["value"]
    assert value["x"] == 10.0 * 100 / image.width and value["width"] == 50.0 * 100 / image.width
    assert region["original_width"] == image.width and region["type"] == "rectanglelabels"


def test_malformed_task_payloads_from_label_studio_are_logged_never_raised(wide_image, curator):
    """What a pull may meet: every oddity becomes a sync-log entry and the rest still applies."""
    from annotation.models import GroundingBox
    from labelstudio.services import UserMap, apply_ls_task

    batch = batch_create(per_reader=False, name="odd payloads", images=[wide_image], actor=curator)
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=77)
    AnnotationTask.objects.filter(batch=batch).update(ls_task_id=501)
    batch.refresh_from_db()
    users = UserMap(client=None)
    good_box = {"id": "g", "from_name": "findings", "to_name": "image", "type": "rectanglelabels",
                "value": {"x": 10, "y": 10, "width": 10, "height": 10, "rotation": 0, "rectanglelabels": ["cyst"]}}
    payloads = [
        "not a task", {"id": "501"}, {"id": 999, "annotations": []}, {"id": 501, "annotations": "nope"},
        {"id": 501, "annotations": [
            "not an annotation",
            {"result": []},                                         # no id
            {"id": 1, "result": "not a list", "completed_by": "someone"},
            {"id": 2, "result": [None, {"type": "rectanglelabels"}, good_box], "completed_by": {"id": "x"},
             "lead_time": "slow", "created_at": 12, "updated_at": "not a date"},
        ]},
    ]
    for payload in payloads:
        apply_ls_task(batch=batch, ls_task=payload, users=users)
    codes = list(SyncLogEntry.objects.filter(batch=batch, level="error").values_list("code", flat=True))
    assert codes.count("malformed") >= 6 and "unknown_task" in codes
    assert LabelStudioAnnotation.objects.count() == 2
    box = GroundingBox.objects.get(source="label_studio")
    assert box.xyxy == (30.0, 21.7, 60.0, 43.4) and box.label == "cyst"


def test_task_page_shows_each_annotation_to_curators_and_keeps_readers_blind(wide_image, curator, make_user):
    from accounts.roles import Role
    from annotation.models import Finding, GroundingBox

    reader = make_user(Role.ANNOTATOR)
    batch = batch_create(per_reader=False, name="task page", images=[wide_image], readers=[reader], actor=curator)
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=88)
    task = batch.tasks.get()
    AnnotationTask.objects.filter(pk=task.pk).update(ls_task_id=601)
    LabelStudioAnnotation.objects.create(task=task, ls_annotation_id=9, author=reader, result=[], result_hash="h",
                                         answer=["cyst"], texts={"rationale": "thin wall, fluid density",
                                                                 "question": "Is this a simple cyst?"})
    finding = Finding.objects.create(image=wide_image, kind="lesion", label="cyst", source="label_studio",
                                     attributes={"shape": "round"})
    GroundingBox.objects.create(finding=finding, image=wide_image, x0=0, y0=0, x1=37, y1=41, label="cyst",
                                source="label_studio", author=reader, ls_annotation_id="9", ls_result_id="r1")
    url = reverse("labelstudio:task-detail", args=[batch.pk, task.pk])
    client = Client()
    client.force_login(curator)
    page = client.get(url).content.decode()
    for text in ("thin wall, fluid density", "Is this a simple cyst?", "0, 0, 37, 41", "Shape: round", reader.username):
        assert text in page
    client.force_login(reader)
    assert client.get(url).status_code == 403, "readers do not see each other's annotations"


def test_label_studio_rows_are_read_only_in_django_admin(users, wide_image, curator):
    from accounts.roles import Role

    batch = batch_create(per_reader=False, name="admin view", images=[wide_image], actor=curator)
    SyncLogEntry.objects.create(batch=batch, direction="push", level="info", code="pushed", message="ok")
    client = Client()
    client.force_login(users[Role.ADMIN])
    for model in ("annotationbatch", "annotationtask", "labelstudioannotation", "annotatordisagreement",
                  "synclogentry"):
        assert client.get(reverse(f"admin:labelstudio_{model}_changelist")).status_code == 200
        assert client.get(reverse(f"admin:labelstudio_{model}_add")).status_code == 403
    assert client.get(reverse("admin:labelstudio_annotationbatch_change", args=[batch.pk])).status_code == 200
