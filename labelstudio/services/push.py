"""Push: a batch becomes a Label Studio project; its tasks are imported in chunks, idempotently
and resumably (each chunk's ids saved at once; a retry first recovers tasks that did land)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import Finding, GroundingBox
from audit.services import audit_record
from common.formatting import plural
from labelstudio import config as ls_config
from labelstudio.client import LabelStudioClient, LabelStudioRejected, LabelStudioUnavailable
from labelstudio.convert import pixels_to_percent
from labelstudio.models import AnnotationBatch, AnnotationTask, ReaderProject, ReaderTask
from labelstudio.services.batches import image_url, sync_log, webhook_url
from labelstudio.services.readers import reader_workspace_ensure, workspace_client
from workers.models import EvaluationRun, Prediction


def batch_vocabulary() -> ls_config.Vocabulary:
    used = Finding.objects.filter(status=Finding.Status.ACTIVE).values_list("kind", "label").distinct()
    lesions = {label for kind, label in used if kind == Finding.Kind.LESION}
    anatomy = {label for kind, label in used if kind == Finding.Kind.ANATOMY}
    return ls_config.default_vocabulary(extra_lesions=lesions, extra_anatomy=anatomy)


def batch_label_config(batch: AnnotationBatch, vocabulary: ls_config.Vocabulary | None = None) -> str:
    multiple = batch.with_qa and batch.tasks.filter(qa_item__category__answer_type="multi_choice").exists()
    return ls_config.build_label_config(vocabulary or batch_vocabulary(), with_qa=batch.with_qa, multiple=multiple)


def _box_result(result_id: str, control: str, label: str, box, width: int, height: int) -> dict:
    return {"id": result_id, "from_name": control, "to_name": "image", "type": "rectanglelabels",
            "original_width": width, "original_height": height, "image_rotation": 0,
            "value": {**pixels_to_percent(box, width=width, height=height), "rectanglelabels": [label]}}


def _reference_predictions(sizes: dict[int, tuple[int, int]]) -> dict[int, list[dict]]:
    """Existing active boxes (phantom truth, earlier annotations, manual) as one pre-annotation per
    source, e.g. model_version 'medr2:phantom'. `sizes`: image id -> (width, height)."""
    out: dict[int, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    rows = (GroundingBox.objects.filter(image_id__in=list(sizes), status=Finding.Status.ACTIVE)
            .order_by("pk").values_list("pk", "image_id", "source", "label", "finding__kind", "x0", "y0", "x1", "y1"))
    for pk, image_id, source, label, kind, x0, y0, x1, y1 in rows.iterator(chunk_size=5000):
        control = "anatomy" if kind == Finding.Kind.ANATOMY else "findings"
        width, height = sizes[image_id]
        out[image_id][source].append(_box_result(f"medr2-box-{pk}", control, label, (x0, y0, x1, y1), width, height))
    return {image_id: [{"model_version": f"medr2:{source}", "result": results}
                       for source, results in sorted(per_source.items())]
            for image_id, per_source in out.items()}


def _model_predictions(image_ids: list[int]) -> dict[int, list[dict]]:
    """Boxes that models predicted for box questions on these images (clean variants, each model's
    latest completed run), one pre-annotation per model and run."""
    latest = {}
    completed = EvaluationRun.objects.filter(status=EvaluationRun.Status.COMPLETED).prefetch_related("endpoints")
    for run in completed.order_by("pk"):
        for endpoint in run.endpoints.all():
            latest[endpoint.pk] = run.pk
    if not latest:
        return {}
    query = Q()
    for endpoint_id, run_id in latest.items():
        query |= Q(endpoint_id=endpoint_id, run_id=run_id)
    rows = (Prediction.objects.filter(query, item__chain__image_id__in=image_ids, item__category__answer_type="box",
                                      variant__kind="clean", outcome="answered")
            .select_related("endpoint", "item__chain__image").order_by("pk"))
    out: dict[int, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for p in rows:
        image = p.item.chain.image
        box = p.parsed if isinstance(p.parsed, list) and len(p.parsed) == 4 else None
        if box is None or not (0 <= box[0] < box[2] <= image.width and 0 <= box[1] < box[3] <= image.height):
            continue  # outside the image: shown nowhere rather than clipped
        label = next(iter(p.item.evidence_boxes.values_list("label", flat=True)), "") or "nodule"
        control = "anatomy" if p.item.category.code == "anatomy-box" else "findings"
        version = f"{p.endpoint.name} (run {p.run_id})"
        out[image.pk][version].append(_box_result(f"pred-{p.pk}", control, label, box, image.width, image.height))
    return {image_id: [{"model_version": v, "result": r} for v, r in sorted(per.items())]
            for image_id, per in out.items()}


def task_payloads(tasks: list[AnnotationTask], *, with_predictions: bool = True) -> list[dict]:
    sizes = {t.image_id: (t.image.width, t.image.height) for t in tasks}
    references = _reference_predictions(sizes) if with_predictions else {}
    models = _model_predictions(sorted(sizes)) if with_predictions else {}
    payloads = []
    for task in tasks:
        image = task.image
        data = {"image": image_url(image.pk), "medr2_task_id": task.pk, "medr2_image_id": image.pk,
                "title": f"Image {image.pk} · {image.modality or image.source_format} {image.body_region}".strip()}
        if task.qa_item_id:
            item = task.qa_item
            data.update({"medr2_item_id": item.pk, "question": item.question,
                         "options": [{"value": str(o)} for o in (item.options or [])]})
        payloads.append({"data": data,
                         "predictions": references.get(image.pk, []) + models.get(image.pk, [])})
    return payloads


@dataclass
class PushResult:
    project_id: int
    created: int = 0
    recovered: int = 0
    pending: int = 0
    log: list[str] = field(default_factory=list)
    reader_projects: dict[int, int] = field(default_factory=dict)    # reader id -> their project


LS_TITLE_MAX = 50       # Label Studio refuses a longer project title (400)


def _project_title(batch: AnnotationBatch, reader=None) -> str:
    """The batch's name, shortened so that the id suffix (how a lost create is found again) always fits."""
    suffix = f"[medr2-batch-{batch.pk}]" if reader is None else f"[medr2-batch-{batch.pk}-reader-{reader.pk}]"
    name = batch.name[:max(0, LS_TITLE_MAX - len(suffix) - 1)].strip()
    return f"{name} {suffix}" if name else suffix


def batch_push(*, batch: AnnotationBatch, actor=None, client: LabelStudioClient | None = None,
               progress=None, clients=workspace_client, provisioner=None) -> PushResult:
    """Create or update the batch's project (per-reader batches: each reader's project in their own
    organization), then import every task not yet in Label Studio.
    Raises LabelStudioUnavailable (retry later; status 'retrying') or LabelStudioRejected ('failed')."""
    AnnotationBatch.objects.filter(pk=batch.pk).update(status=AnnotationBatch.Status.PUSHING,
                                                       push_attempts=batch.push_attempts + 1)
    batch.refresh_from_db()
    try:
        if batch.per_reader:
            result = _push_reader_copies(batch, actor, progress, clients, provisioner)
        else:
            result = _push(batch, client or LabelStudioClient.from_settings(), actor, progress)
    except (LabelStudioUnavailable, LabelStudioRejected) as exc:
        retrying = isinstance(exc, LabelStudioUnavailable)
        AnnotationBatch.objects.filter(pk=batch.pk).update(
            status=AnnotationBatch.Status.RETRYING if retrying else AnnotationBatch.Status.FAILED, push_error=str(exc))
        sync_log(batch=batch, direction="push", level="warning" if retrying else "error",
                 code="unavailable" if retrying else "rejected", message=str(exc))
        raise
    return result


def _push(batch: AnnotationBatch, client: LabelStudioClient, actor, progress) -> PushResult:
    config = batch_label_config(batch)
    digest = ls_config.config_hash(config)
    if batch.ls_project_id is None:
        title = _project_title(batch)
        project_id = client.find_project(title) if batch.push_attempts > 1 else None
        if project_id is None:
            project_id = client.create_project(title=title, description=batch.description, label_config=config,
                                               maximum_annotations=batch.maximum_annotations,
                                               prefill=batch.mode == AnnotationBatch.Mode.CORRECTION)
        with transaction.atomic():
            AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=project_id, label_config_hash=digest)
            audit_record(actor=actor, action="labelstudio.project.create", target=batch,
                         after={"ls_project_id": project_id, "label_config_sha256": digest})
        batch.ls_project_id, batch.label_config_hash = project_id, digest
        sync_log(batch=batch, direction="push", level="info", code="project_created",
                 message=f"Label Studio project {project_id} created")
    elif batch.label_config_hash != digest:
        client.update_project(batch.ls_project_id, label_config=config, maximum_annotations=batch.maximum_annotations)
        with transaction.atomic():
            AnnotationBatch.objects.filter(pk=batch.pk).update(label_config_hash=digest)
            audit_record(actor=actor, action="labelstudio.project.update", target=batch,
                         before={"label_config_sha256": batch.label_config_hash}, after={"label_config_sha256": digest})
        batch.label_config_hash = digest
    if settings.LABEL_STUDIO_WEBHOOK_SECRET:
        client.ensure_webhook(batch.ls_project_id, url=webhook_url(), secret=settings.LABEL_STUDIO_WEBHOOK_SECRET)

    result = PushResult(project_id=batch.ls_project_id)
    pending = AnnotationTask.objects.filter(batch=batch, ls_task_id__isnull=True)
    if batch.push_attempts > 1 and pending.exists():
        result.recovered = _recover_task_ids(batch, client)
    chunk = max(1, settings.LABEL_STUDIO_PUSH_CHUNK)
    todo = list(pending.order_by("pk").values_list("pk", flat=True))
    result.pending = len(todo)
    for start in range(0, len(todo), chunk):
        tasks = list(AnnotationTask.objects.filter(pk__in=todo[start:start + chunk])
                     .select_related("image", "qa_item").order_by("pk"))
        ids = client.import_tasks(batch.ls_project_id,
                                  task_payloads(tasks, with_predictions=batch.mode == AnnotationBatch.Mode.CORRECTION))
        _set_ls_task_ids([(task.pk, ls_id) for task, ls_id in zip(tasks, ids, strict=True)])
        result.created += len(tasks)
        if progress:
            progress(len(tasks))
    return _pushed(batch, actor, result)


def _pushed(batch: AnnotationBatch, actor, result: PushResult) -> PushResult:
    now = timezone.now()
    with transaction.atomic():
        AnnotationBatch.objects.filter(pk=batch.pk).update(
            status=AnnotationBatch.Status.PUSHED, push_error="", pushed_at=now, next_retry_at=None,
            # the oldest links expire first; batch_refresh_urls re-signs them all
            urls_expire_at=batch.urls_expire_at or now + timedelta(seconds=settings.LABEL_STUDIO_IMAGE_URL_MAX_AGE_S))
        audit_record(actor=actor, action="labelstudio.batch.push", target=batch, after={
            "ls_project_id": result.project_id, "tasks_created": result.created, "tasks_recovered": result.recovered,
            "reader_projects": result.reader_projects})
    sync_log(batch=batch, direction="push", level="info", code="pushed",
             message=f"{plural(result.created, 'task')} imported, {result.recovered} recovered from an earlier attempt")
    batch.refresh_from_db()
    return result


def _push_reader_copies(batch: AnnotationBatch, actor, progress, clients, provisioner) -> PushResult:
    """One project per reader, in the reader's own organization, holding that reader's copy of every
    task. Independent batches carry no pre-annotation at all; correction batches pre-fill."""
    readers = list(batch.readers.order_by("pk"))
    if not readers:
        raise LabelStudioRejected("a batch needs its readers before it goes to Label Studio: "
                                  "each reader gets their own copy")
    config = batch_label_config(batch)
    digest = ls_config.config_hash(config)
    prefill = batch.mode == AnnotationBatch.Mode.CORRECTION
    result = PushResult(project_id=0)
    for reader in readers:
        workspace = reader_workspace_ensure(reader=reader, actor=actor, provisioner=provisioner)
        client = clients(workspace)
        try:
            copy = _reader_project(batch, reader, workspace, client, config, digest, actor)
            result.reader_projects[reader.pk] = copy.ls_project_id
            _import_copy(batch, copy, client, prefill, result, progress)
        finally:
            client.close()
    result.project_id = next(iter(result.reader_projects.values()))
    return _pushed(batch, actor, result)


def _reader_project(batch, reader, workspace, client: LabelStudioClient, config: str, digest: str,
                    actor) -> ReaderProject:
    prefill = batch.mode == AnnotationBatch.Mode.CORRECTION
    copy = ReaderProject.objects.filter(batch=batch, reader=reader).first()
    if copy is None:
        title = _project_title(batch, reader)
        project_id = client.find_project(title) if batch.push_attempts > 1 else None
        if project_id is None:
            # one annotation per copy: the reader is the only annotator of their project
            project_id = client.create_project(title=title, description=batch.description, label_config=config,
                                               maximum_annotations=1, prefill=prefill)
        with transaction.atomic():
            copy = ReaderProject.objects.create(batch=batch, reader=reader, workspace=workspace,
                                                ls_project_id=project_id, label_config_hash=digest)
            audit_record(actor=actor, action="labelstudio.project.create", target=batch, after={
                "ls_project_id": project_id, "reader_id": reader.pk, "label_config_sha256": digest,
                "ls_organization_id": workspace.ls_organization_id, "prefill": prefill})
        sync_log(batch=batch, direction="push", level="info", code="project_created",
                 message=f"Label Studio project {project_id} created for reader {reader.pk} "
                         f"in their organization {workspace.ls_organization_id}")
    elif copy.label_config_hash != digest:
        client.update_project(copy.ls_project_id, label_config=config)
        with transaction.atomic():
            ReaderProject.objects.filter(pk=copy.pk).update(label_config_hash=digest)
            audit_record(actor=actor, action="labelstudio.project.update", target=batch, before={
                "label_config_sha256": copy.label_config_hash}, after={"label_config_sha256": digest,
                                                                       "ls_project_id": copy.ls_project_id})
    if settings.LABEL_STUDIO_WEBHOOK_SECRET:
        client.ensure_webhook(copy.ls_project_id, url=webhook_url(), secret=settings.LABEL_STUDIO_WEBHOOK_SECRET)
    return copy


def _import_copy(batch, copy: ReaderProject, client: LabelStudioClient, prefill: bool, result: PushResult,
                 progress) -> None:
    done = ReaderTask.objects.filter(reader_project=copy).values("task_id")
    pending = AnnotationTask.objects.filter(batch=batch).exclude(pk__in=done)
    if batch.push_attempts > 1 and pending.exists():
        found = {}
        for ls_task in client.iter_tasks(copy.ls_project_id, fields="task_only", page_size=1000):
            ours = (ls_task.get("data") or {}).get("medr2_task_id")
            if isinstance(ours, int) and isinstance(ls_task.get("id"), int):
                found[ours] = ls_task["id"]
        recovered = [ReaderTask(reader_project=copy, task_id=pk, ls_task_id=found[pk])
                     for pk in pending.filter(pk__in=list(found)).values_list("pk", flat=True)]
        ReaderTask.objects.bulk_create(recovered)
        result.recovered += len(recovered)
    todo = list(pending.order_by("pk").values_list("pk", flat=True))
    result.pending += len(todo)
    chunk = max(1, settings.LABEL_STUDIO_PUSH_CHUNK)
    for start in range(0, len(todo), chunk):
        tasks = list(AnnotationTask.objects.filter(pk__in=todo[start:start + chunk])
                     .select_related("image", "qa_item").order_by("pk"))
        ids = client.import_tasks(copy.ls_project_id, task_payloads(tasks, with_predictions=prefill))
        ReaderTask.objects.bulk_create([ReaderTask(reader_project=copy, task=task, ls_task_id=ls_id)
                                        for task, ls_id in zip(tasks, ids, strict=True)])
        AnnotationTask.objects.filter(pk__in=[t.pk for t in tasks], status=AnnotationTask.Status.PENDING).update(
            status=AnnotationTask.Status.OPEN)
        result.created += len(tasks)
        if progress:
            progress(len(tasks))


def _recover_task_ids(batch: AnnotationBatch, client: LabelStudioClient) -> int:
    """Tasks an interrupted import created in Label Studio before we could save their ids."""
    found: dict[int, int] = {}
    for ls_task in client.iter_tasks(batch.ls_project_id, fields="task_only", page_size=1000):
        ours = (ls_task.get("data") or {}).get("medr2_task_id")
        if isinstance(ours, int) and isinstance(ls_task.get("id"), int):
            found[ours] = ls_task["id"]
    pks = list(AnnotationTask.objects.filter(batch=batch, ls_task_id__isnull=True, pk__in=list(found))
               .values_list("pk", flat=True))
    _set_ls_task_ids([(pk, found[pk]) for pk in pks])
    return len(pks)


def _set_ls_task_ids(pairs: list[tuple[int, int]]) -> None:
    """Record (our task id, Label Studio task id) pairs with one UPDATE ... FROM (VALUES ...) per
    1000 (Django's bulk_update builds a CASE per row: 0.6 s per 500 rows on PostgreSQL here)."""
    table = AnnotationTask._meta.db_table
    for start in range(0, len(pairs), 1000):
        chunk = pairs[start:start + 1000]
        values = ", ".join(["(%s, %s)"] * len(chunk))
        params = [str(AnnotationTask.Status.OPEN)] + [v for pair in chunk for v in pair]
        with connection.cursor() as cursor:
            # VALUES columns are column1, column2 in both PostgreSQL and SQLite (>= 3.33 for UPDATE FROM)
            cursor.execute(f"UPDATE {table} SET ls_task_id = v.column2, status = %s FROM (VALUES {values}) AS v "
                           f"WHERE {table}.id = v.column1", params)


def batch_refresh_urls(*, batch: AnnotationBatch, client: LabelStudioClient | None,
                       clients=workspace_client) -> int:
    """Signed image URLs expire: re-sign every task's data (every reader's copy) well before they do."""
    tasks = list(AnnotationTask.objects.filter(batch=batch, ls_task_id__isnull=False)
                 .select_related("image", "qa_item"))
    for task, payload in zip(tasks, task_payloads(tasks, with_predictions=False), strict=True):
        client.update_task_data(task.ls_task_id, payload["data"])
    for copy in ReaderProject.objects.filter(batch=batch).select_related("workspace"):
        copies = list(ReaderTask.objects.filter(reader_project=copy).select_related("task__image", "task__qa_item"))
        reader_client = clients(copy.workspace)
        try:
            for task_copy, payload in zip(copies, task_payloads([c.task for c in copies], with_predictions=False),
                                          strict=True):
                reader_client.update_task_data(task_copy.ls_task_id, payload["data"])
        finally:
            reader_client.close()
        tasks += copies
    with transaction.atomic():
        AnnotationBatch.objects.filter(pk=batch.pk).update(
            urls_expire_at=timezone.now() + timedelta(seconds=settings.LABEL_STUDIO_IMAGE_URL_MAX_AGE_S))
        audit_record(actor=None, action="labelstudio.batch.refresh_urls", target=batch, after={"tasks": len(tasks)})
    sync_log(batch=batch, direction="push", level="info", code="urls_refreshed",
             message=f"image URLs of {plural(len(tasks), 'task')} re-signed")
    return len(tasks)
