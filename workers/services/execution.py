"""Executing one batch: generate, parse, score, bulk-write predictions.

Idempotent by construction: variants that already have a prediction for (run, model) are
skipped, predictions are inserted with ON CONFLICT DO NOTHING on the unique (run, model, variant)
key, and the batch counters are recomputed, not incremented. A batch killed mid-way (SIGKILL,
lost worker) and redelivered by the broker only does what is left. Chunks are written as they
finish, so a kill loses at most one chunk of generation.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone
from PIL import Image as PILImage

from annotation.models import Variant
from annotation.services.variants import variant_image_path
from annotation.storage import resolve
from audit.services import audit_record

from ..backends import BackendError, GenerationRequest, GenerationResult, load_backend
from ..models import EvaluationRun, ModelEndpoint, Prediction, RunBatch
from ..parsing import parse_answer
from ..scoring import score_prediction

log = logging.getLogger(__name__)

VARIANT_FIELDS = ("pk", "item_id", "kind", "prompt", "options", "expected_answer", "params", "image_recipe",
                  "item__category__answer_type", "item__category__code", "item__chain__image__file",
                  "item__chain__image__width", "item__chain__image__height")


@dataclass(frozen=True)
class BatchOutcome:
    batch_id: int
    status: str
    written: int = 0
    skipped: int = 0
    errors: int = 0


def _load_image(row: dict) -> PILImage.Image:
    if row["image_recipe"]:
        path = variant_image_path(Variant(image_recipe=row["image_recipe"]))
    else:
        path = resolve(row["item__chain__image__file"])
    with PILImage.open(path) as im:
        return im.convert("RGB")


def _requests(rows: Sequence[dict], endpoint: ModelEndpoint, uses_image: bool) -> tuple[list, dict[int, str]]:
    """GenerationRequests for the rows whose input could be prepared; errors for the others."""
    requests, errors = [], {}
    template = endpoint.prompt_template
    for row in rows:
        image = None
        if uses_image:
            try:
                image = _load_image(row)
            except Exception as exc:  # a missing or corrupt file fails this variant only
                errors[row["pk"]] = f"image could not be loaded: {type(exc).__name__}: {exc}"[:500]
                continue
        requests.append(GenerationRequest(
            key=row["pk"], prompt=template.replace("{prompt}", row["prompt"]), image=image,
            answer_type=row["item__category__answer_type"], options=tuple(str(o) for o in row["options"] or ()),
            category=row["item__category__code"],
            image_size=(row["item__chain__image__width"], row["item__chain__image__height"])))
    return requests, errors


def _prediction(run_id: int, endpoint: ModelEndpoint, row: dict, result: GenerationResult | None,
                error: str = "") -> Prediction:
    answer_type = row["item__category__answer_type"]
    options = [str(o) for o in row["options"] or ()]
    error = error or (result.error if result else "no result returned")
    if error:
        outcome, value, method, detail = "error", None, "error", ""
        text = (result.text if result else "").replace("\x00", "\ufffd")
    else:
        text = result.text.replace("\x00", "\ufffd")  # PostgreSQL text cannot hold NUL; models can emit it
        parsed = parse_answer(text, answer_type=answer_type, options=options, box_format=endpoint.box_format,
                              image_size=(row["item__chain__image__width"], row["item__chain__image__height"]))
        outcome, value, method, detail = parsed.outcome, parsed.value, parsed.method, parsed.detail.replace("\x00", "")
        if isinstance(value, str):
            value = value.replace("\x00", "")
    score = score_prediction(answer_type=answer_type, kind=row["kind"], expected=row["expected_answer"] or {},
                             params=row["params"] or {}, options=options, outcome=outcome, value=value)
    return Prediction(
        run_id=run_id, endpoint_id=endpoint.pk, variant_id=row["pk"], item_id=row["item_id"], raw_output=text,
        outcome=outcome, parsed=value, parse_method=method, parse_detail=detail[:300], correct=score.correct,
        iou=score.iou, cue_adopted=score.cue_adopted, latency_ms=result.latency_ms if result else 0.0,
        tokens_in=result.tokens_in if result else None, tokens_out=result.tokens_out if result else None,
        error=error[:2000])


def _digest(predictions: Sequence[Prediction]) -> str:
    h = hashlib.sha256()
    for p in sorted(predictions, key=lambda p: p.variant_id):
        h.update(json.dumps([p.variant_id, p.raw_output, p.outcome, p.parsed, p.correct], default=str).encode())
    return h.hexdigest()


def _cancelled(run_id: int) -> bool:
    return EvaluationRun.objects.filter(pk=run_id, status=EvaluationRun.Status.CANCELLED).exists()


def batch_execute(*, batch_id: int, chunk_size: int | None = None) -> BatchOutcome:
    """Run one batch to completion (or until the run is cancelled). Raises BackendUnavailable
    for a transient whole-batch failure, so the task can retry it later."""
    batch = RunBatch.objects.select_related("run", "endpoint").filter(pk=batch_id).first()
    if batch is None:
        return BatchOutcome(batch_id, "missing")
    if batch.status == RunBatch.Status.DONE:
        return BatchOutcome(batch_id, "done")
    run, endpoint = batch.run, batch.endpoint
    if run.status != EvaluationRun.Status.RUNNING:
        return BatchOutcome(batch_id, run.status)
    RunBatch.objects.filter(pk=batch_id).update(status=RunBatch.Status.RUNNING, attempts=batch.attempts + 1,
                                                started_at=batch.started_at or timezone.now())
    ids = list(batch.variant_ids)
    done = set(Prediction.objects.filter(run=run, endpoint=endpoint, variant_id__in=ids)
               .values_list("variant_id", flat=True))
    todo = [i for i in ids if i not in done]
    rows = {r["pk"]: r for r in Variant.objects.filter(pk__in=todo).values(*VARIANT_FIELDS)}
    backend = load_backend(endpoint.backend, endpoint.parameters)
    uses_image = getattr(backend, "uses_image", True)
    # write granularity: one backend batch (so a kill loses at most one), 256 for instant backends
    size = chunk_size or int(endpoint.parameters.get("batch_size") or 0) or 256
    written = errors = 0
    for start in range(0, len(todo), size):
        if _cancelled(run.pk):
            return BatchOutcome(batch_id, "cancelled", written, len(done), errors)
        chunk = [rows[i] for i in todo[start:start + size] if i in rows]
        missing = [i for i in todo[start:start + size] if i not in rows]
        requests, input_errors = _requests(chunk, endpoint, uses_image)
        results = {r.key: r for r in backend.generate(requests)} if requests else {}
        predictions = [_prediction(run.pk, endpoint, row, results.get(row["pk"]), input_errors.get(row["pk"], ""))
                       for row in chunk]
        if missing:
            log.warning("batch %s: %d variants no longer exist", batch_id, len(missing))
        with transaction.atomic():
            Prediction.objects.bulk_create(predictions, ignore_conflicts=True, batch_size=2000)
            written += len(predictions)
            errors += sum(p.outcome == "error" for p in predictions)
            RunBatch.objects.filter(pk=batch_id).update(n_done=len(done) + written, n_errors=errors)
    with transaction.atomic():
        n_errors = Prediction.objects.filter(run=run, endpoint=endpoint, variant_id__in=ids, outcome="error").count()
        RunBatch.objects.filter(pk=batch_id).update(status=RunBatch.Status.DONE, n_done=len(ids), n_errors=n_errors,
                                                    error="", finished_at=timezone.now())
        digest_rows = list(Prediction.objects.filter(run=run, endpoint=endpoint, variant_id__in=ids)
                           .only("variant_id", "raw_output", "outcome", "parsed", "correct"))
        audit_record(actor=None, action="workers.batch.complete", object_type="workers.runbatch", object_id=batch_id,
                     after={"run_id": run.pk, "endpoint": endpoint.name, "index": batch.index, "variants": len(ids),
                            "written_now": written, "already_done": len(done), "errors": n_errors,
                            "predictions_sha256": _digest(digest_rows)})
    return BatchOutcome(batch_id, "done", written, len(done), errors)


def batch_fail(*, batch_id: int, error: str) -> None:
    """Record that a batch could not run (bad model configuration, backend down after every
    retry). The run finishes as `failed`; resuming it retries these batches."""
    with transaction.atomic():
        RunBatch.objects.filter(pk=batch_id).update(status=RunBatch.Status.FAILED, error=error[:2000],
                                                    finished_at=timezone.now())
        audit_record(actor=None, action="workers.batch.fail", object_type="workers.runbatch", object_id=batch_id,
                     after={"error": error[:500]})


__all__ = ["BackendError", "BatchOutcome", "batch_execute", "batch_fail"]
