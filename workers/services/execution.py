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
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter

import orjson
from django.db import connection, connections as db_connections, transaction
from django.db.models import TextField
from django.db.models.functions import Cast
from django.utils import timezone
from PIL import Image as PILImage

from annotation.models import Variant
from annotation.services.variants import variant_image_path
from annotation.storage import resolve
from audit.services import audit_record
from common.collector import collector_paused
from common.db import ids_in, json_loads, plain_values

from ..backends import BackendError, GenerationRequest, GenerationResult, load_backend
from ..models import EvaluationRun, ModelEndpoint, Prediction, RunBatch
from ..parsing import echo_matters, parse_answer, parse_answer_with_box
from ..scoring import score_prediction
from ..scoring.item import asks_for_box
from .prediction_copy import COL, predictions_insert

log = logging.getLogger(__name__)

VARIANT_FIELDS = ("pk", "item_id", "kind", "prompt", "options", "expected_answer", "params",
                  "item__category__answer_type", "item__category__code",
                  "item__chain__image__width", "item__chain__image__height",
                  "item__stage__order")  # the stage: only planted models read it (GenerationRequest.truth)
WRITE_EVERY = 32
IMAGE_FIELDS = ("image_recipe", "item__chain__image__file")  # only read for backends that look at images


@dataclass(frozen=True)
class BatchOutcome:
    batch_id: int
    status: str
    written: int = 0
    skipped: int = 0
    errors: int = 0
    run_id: int | None = None


def _load_image(row: dict) -> PILImage.Image:
    if row["image_recipe"]:
        path = variant_image_path(Variant(image_recipe=row["image_recipe"]))
    else:
        path = resolve(row["item__chain__image__file"])
    with PILImage.open(path) as im:
        return im.convert("RGB")


def _truth(row: dict, options: tuple[str, ...]) -> dict:
    """The variant's own record, for planted-behaviour models only (workers/backends/planted.py)."""
    return {"kind": row["kind"], "params": row["params"] or {}, "expected": row["expected_answer"] or {},
            "stage": row["item__stage__order"], "options": list(options), "item": row["item_id"]}


def _requests(rows: Sequence[dict], endpoint: ModelEndpoint, uses_image: bool,
              needs_truth: bool = False) -> tuple[list, dict[int, str]]:
    """GenerationRequests for the rows whose input could be prepared; errors for the others.
    `needs_truth` (the backend's class attribute): attach the variant's record as `truth`; never for
    real models, which must answer from the prompt and the image alone."""
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
        options = tuple(str(o) for o in row["options"] or ())
        requests.append(GenerationRequest(
            key=row["pk"], prompt=template.replace("{prompt}", row["prompt"]), image=image,
            answer_type=row["item__category__answer_type"], options=options,
            category=row["item__category__code"],
            image_size=(row["item__chain__image__width"], row["item__chain__image__height"]),
            truth=_truth(row, options) if needs_truth else None))
    return requests, errors


def _parse_uncached(text: str, answer_type: str, options: tuple, box_format: str, image_size: tuple, joint: bool,
                    prompt: str | None = None, rejecting: str | None = None):
    """(parsed answer, parsed box or None). Joint answer + box items parse both from one response. The
    prompt's own sentences are removed from the output first (an echoed hint is not an answer); on
    premise variants a prose rejection of the premise reads as the rejecting option."""
    if joint:
        return parse_answer_with_box(text, answer_type=answer_type, options=options, box_format=box_format,
                                     image_size=image_size, prompt=prompt, rejecting=rejecting)
    return parse_answer(text, answer_type=answer_type, options=options, box_format=box_format,
                        image_size=image_size, prompt=prompt, rejecting=rejecting), None


_parse_cached = lru_cache(maxsize=65536)(_parse_uncached)
PREMISE_KINDS = ("false_premise", "true_premise")   # parsed alike: the control must not be read differently


def _parse(text: str, answer_type: str, options: tuple, box_format: str, image_size: tuple, joint: bool = False,
           prompt: str | None = None, rejecting: str | None = None):
    """parse_answer is pure: short answers ("A", "Yes", "B. liver") repeat across a run, so they are
    parsed once per worker process; long outputs are parsed each time."""
    if len(text) <= 64:   # a prompt that cannot change the parse stays out of the key: "B" is parsed once
        return _parse_cached(text, answer_type, options, box_format, image_size, joint,
                             prompt if echo_matters(text) else None, rejecting)
    return _parse_uncached(text, answer_type, options, box_format, image_size, joint, prompt, rejecting)


DIGEST_COLUMNS = ("variant_id", "raw_output", "outcome", "parsed", "correct")
_digest_of = itemgetter(*(COL[c] for c in DIGEST_COLUMNS))     # a prediction row's digest columns
_outcome_of = itemgetter(COL["outcome"])


def _no_nul(text: str) -> str:
    """PostgreSQL text and jsonb cannot hold NUL, and models can emit it."""
    return text.replace("\x00", "\ufffd")


def _judge(endpoint: ModelEndpoint, row: dict, text: str) -> tuple:
    """(outcome, parsed value, method, detail, box, score) of a response `text` to the variant `row`."""
    answer_type = row["item__category__answer_type"]
    options = [str(o) for o in row["options"] or ()]
    expected = row["expected_answer"] or {}
    box = None
    rejecting = (row["params"] or {}).get("rejecting_letter") if row["kind"] in PREMISE_KINDS else None
    # the prompt as sent, only where the parse reads it (a short answer that cannot echo it is parsed
    # without: _parse leaves it out of the cache key then)
    prompt = (endpoint.prompt_template.replace("{prompt}", row.get("prompt") or "")
              if len(text) > 64 or echo_matters(text) else None)
    parsed, parsed_box = _parse(text, answer_type, tuple(options), endpoint.box_format,
                                (row["item__chain__image__width"], row["item__chain__image__height"]),
                                asks_for_box(answer_type, expected), prompt, rejecting)
    outcome, value, method, detail = parsed.outcome, parsed.value, parsed.method, _no_nul(parsed.detail)
    if isinstance(value, str):
        value = _no_nul(value)
    if parsed_box is not None:      # joint answer + box: the box is parsed and recorded beside the choice
        box = parsed_box.value if parsed_box.outcome == "answered" else None
        detail = f"{detail}; box: {parsed_box.method} {_no_nul(parsed_box.detail)}"
    elif answer_type == "box" and outcome == "answered":
        box = value
    score = score_prediction(answer_type=answer_type, kind=row["kind"], expected=expected,
                             params=row["params"] or {}, options=options, outcome=outcome, value=value, box=box)
    return outcome, value, method, detail[:300], box, score


_JUDGED: dict[tuple, tuple] = {}
JUDGED_MAX = 50_000   # entries (~30 MB at most); emptied when full
_echo_matters_short = lru_cache(maxsize=4096)(echo_matters)


def _judged(endpoint: ModelEndpoint, row: dict, text: str) -> tuple:
    """_judge, remembered per worker process for short responses whose parse cannot read the prompt: the
    judgement is then a pure function of the response and the variant's stored fields (their JSON as stored,
    `row["raw"]`). The models of a run get the same batches of variants one after the other (dispatch
    interleaves them), and short answers ("A", "Yes", "[0, 0, 1, 1]") repeat, so most rows of a baseline
    or of a model that answers with a letter are judged once per process."""
    raw = row.get("raw")
    if raw is None or len(text) > 64 or _echo_matters_short(text):
        return _judge(endpoint, row, text)
    key = (text, endpoint.box_format, row["item__category__answer_type"], row["kind"],
           row["item__chain__image__width"], row["item__chain__image__height"], raw)
    judged = _JUDGED.get(key)
    if judged is None:
        if len(_JUDGED) >= JUDGED_MAX:
            _JUDGED.clear()
        judged = _JUDGED[key] = _judge(endpoint, row, text)
    return judged


def _prediction(run_id: int, endpoint: ModelEndpoint, row: dict, result: GenerationResult | None,
                error: str = "", now=None) -> tuple:
    """One prediction as a row of PREDICTION_COLUMNS (parsed value still a Python object)."""
    error = error or (result.error if result else "no result returned")
    text = _no_nul(result.text if result else "")
    if error:
        score = score_prediction(answer_type=row["item__category__answer_type"], kind=row["kind"],
                                 expected=row["expected_answer"] or {}, params=row["params"] or {},
                                 options=[str(o) for o in row["options"] or ()], outcome="error", value=None)
        outcome, value, method, detail, box = "error", None, "error", "", None
    else:
        outcome, value, method, detail, box, score = _judged(endpoint, row, text)
    return (run_id, endpoint.id, row["pk"], row["item_id"], text, outcome, value, method, detail, score.correct,
            score.iou, box, score.cue_adopted, result.latency_ms if result else 0.0,
            result.tokens_in if result else None, result.tokens_out if result else None, error[:2000],
            now or timezone.now())


def _digest(rows) -> str:
    """SHA-256 of the JSON list of (variant, raw output, outcome, parsed, correct) in variant order."""
    ordered = sorted(rows)
    try:
        blob = orjson.dumps(ordered)
    except TypeError:   # what orjson refuses (an integer past 64 bits in a parsed value)
        blob = json.dumps(ordered, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


JSON_VARIANT_FIELDS = ("options", "expected_answer", "params", "image_recipe")


def _variant_rows(ids: list[int], fields: Sequence[str]) -> dict[int, dict]:
    """The variants' rows by id, read with `plain_values` (Django's per-row iteration cost more than the query).
    JSON columns are read as text on every backend and decoded with `json_loads`: the text as stored is
    part of `_judged`'s key (`row["raw"]`)."""
    json_fields = [f for f in fields if f in JSON_VARIANT_FIELDS]
    plain = [f for f in fields if f not in JSON_VARIANT_FIELDS]
    queryset = Variant.objects.filter(ids_in("pk", ids)).annotate(
        **{f"j_{f}": Cast(f, TextField()) for f in json_fields})
    names, at = [*plain, *json_fields], len(plain)
    rows = {}
    for values in plain_values(queryset, [*plain, *(f"j_{f}" for f in json_fields)]):
        row = dict(zip(names, values))
        texts = values[at:]
        for f, text in zip(json_fields, texts):
            row[f] = json_loads(text)
        row["raw"] = texts
        rows[row["pk"]] = row
    return rows


_INPUTS: OrderedDict[tuple, tuple[float, tuple]] = OrderedDict()
INPUTS_MAX = 8          # batches' inputs kept per worker process (~1,000 variants each)
INPUTS_TTL_S = 60.0


def _instant_inputs(ids: list[int], endpoint: ModelEndpoint, needs_truth: bool) -> tuple[dict, list, list]:
    """An instant backend's inputs (variant rows by id, the rows in order, their requests), kept per worker
    process for the next model of the run. Dispatch sends a run's batches by index, then model, so every
    model's batch over the same variants arrives within seconds, and each worker process would read and
    decode the same rows (a join over five tables) and build the same requests once per model: a third of a
    baseline batch's CPU time. Safe to share: a variant is never updated (a correction makes a new item
    version and new variants) and cannot be deleted once it has a prediction (PROTECT); requests are frozen.
    Kept at most `INPUTS_TTL_S` (a category's answer type edited during a run reaches its batches within a
    minute) and dropped on any error, so a redelivered batch reads its variants afresh."""
    key = (tuple(ids), endpoint.prompt_template, needs_truth)
    now = time.monotonic()
    hit = _INPUTS.get(key)
    if hit is not None and now - hit[0] <= INPUTS_TTL_S:
        _INPUTS.move_to_end(key)
        return hit[1]
    rows = _variant_rows(ids, VARIANT_FIELDS)
    chunk = [rows[i] for i in ids if i in rows]
    requests, _ = _requests(chunk, endpoint, False, needs_truth)
    _INPUTS[key] = (now, (rows, chunk, requests))
    _INPUTS.move_to_end(key)
    while len(_INPUTS) > INPUTS_MAX:
        _INPUTS.popitem(last=False)
    return rows, chunk, requests


RUN_UNREAD = ("run__metrics", "run__provenance", "run__item_filters", "run__variant_kinds")


def _cancelled(run_id: int) -> bool:
    return EvaluationRun.objects.filter(pk=run_id, status=EvaluationRun.Status.CANCELLED).exists()


def batch_execute(*, batch_id: int, chunk_size: int | None = None) -> BatchOutcome:
    """Run one batch to completion (or until the run is cancelled). Raises BackendUnavailable
    for a transient whole-batch failure, so the task can retry it later."""
    # the run's JSON columns are never read here; a scored run's metrics are megabytes (9.5 MB for 14 models
    # at the paper's scale: 0.3 s per batch of a resumed run to read and decode)
    batch = RunBatch.objects.select_related("run", "endpoint").defer(*RUN_UNREAD).filter(pk=batch_id).first()
    if batch is None:
        return BatchOutcome(batch_id, "missing")
    if batch.status == RunBatch.Status.DONE:
        return BatchOutcome(batch_id, "done")
    run, endpoint = batch.run, batch.endpoint
    if run.status != EvaluationRun.Status.RUNNING:
        return BatchOutcome(batch_id, run.status)
    RunBatch.objects.filter(pk=batch_id).update(status=RunBatch.Status.RUNNING, attempts=batch.attempts + 1,
                                                started_at=batch.started_at or timezone.now(),
                                                heartbeat_at=timezone.now())
    backend = load_backend(endpoint.backend, endpoint.parameters)
    with collector_paused(not getattr(backend, "uses_image", True)):   # nothing in a batch makes cycles
        try:
            return _batch_run(batch, backend, chunk_size)
        except Exception:
            _INPUTS.clear()   # a redelivery reads its variants afresh
            raise


def _batch_run(batch: RunBatch, backend, chunk_size: int | None) -> BatchOutcome:
    """batch_execute's work once the batch is marked running: generate, judge and write what is left."""
    batch_id, run, endpoint = batch.pk, batch.run, batch.endpoint
    run_id = run.pk
    ids = list(batch.variant_ids)
    # a first delivery has nothing stored: skip the lookup (a concurrent duplicate delivery is still
    # safe: _insert falls back to ON CONFLICT DO NOTHING, and the digest then reads what is stored)
    done = set() if batch.attempts == 0 else set(
        Prediction.objects.filter(ids_in("variant_id", ids), run=run, endpoint=endpoint)
        .values_list("variant_id", flat=True))
    todo = [i for i in ids if i not in done]
    uses_image = getattr(backend, "uses_image", True)
    needs_truth = getattr(backend, "needs_truth", False)
    fields = VARIANT_FIELDS + IMAGE_FIELDS if uses_image else VARIANT_FIELDS
    inputs = None if uses_image else _instant_inputs(todo, endpoint, needs_truth)
    rows = inputs[0] if inputs else _variant_rows(todo, fields)
    # generation slices: one backend batch; writes: every WRITE_EVERY predictions for models (a kill
    # loses little, writes stay a small share of the time), the whole batch for instant baselines
    gen_size = (int(endpoint.parameters.get("batch_size") or 0) or 8) if uses_image else max(len(todo), 1)
    write_every = chunk_size or (WRITE_EVERY if uses_image else max(len(todo), 1))
    slices = [todo[s:s + gen_size] for s in range(0, len(todo), gen_size)]
    written = errors = 0
    all_new = not done
    mine: list[tuple] = []
    pending: list[tuple] = []

    def prepare(slice_ids: list[int]):
        if inputs:   # an instant backend: one slice, the whole batch, prepared once per process
            return inputs[1], inputs[2], {}, len(slice_ids) - len(inputs[1])
        try:
            chunk = [rows[i] for i in slice_ids if i in rows]
            return (chunk, *_requests(chunk, endpoint, uses_image, needs_truth), len(slice_ids) - len(chunk))
        finally:
            if threading.current_thread() is not threading.main_thread():
                db_connections.close_all()  # a recipe render may have opened one in this thread

    def flush(final: bool = False) -> None:
        nonlocal written, errors, all_new
        if not pending:
            return
        with transaction.atomic(savepoint=False):   # the last one commits with the done mark
            inserted = predictions_insert(pending)
            all_new = all_new and inserted == len(pending)
            written += len(pending)
            errors += list(map(_outcome_of, pending)).count("error")
            if not final:   # the done mark sets the counters of the last one
                RunBatch.objects.filter(pk=batch_id).update(n_done=len(done) + written, n_errors=errors,
                                                            heartbeat_at=timezone.now())
        mine.extend(map(_digest_of, pending))
        pending.clear()

    # images of the next slice load in a background thread while this slice generates
    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = pool.submit(prepare, slices[0]) if slices and uses_image else None
        for k, slice_ids in enumerate(slices):
            if k and _cancelled(run_id):   # the first slice: the run's status was just read
                flush()
                return BatchOutcome(batch_id, "cancelled", written, len(done), errors)
            chunk, requests, input_errors, missing = ahead.result() if ahead else prepare(slice_ids)
            ahead = pool.submit(prepare, slices[k + 1]) if ahead and k + 1 < len(slices) else None
            if missing:
                log.warning("batch %s: %d variants no longer exist", batch_id, missing)
            results = {r.key: r for r in backend.generate(requests)} if requests else {}
            now = timezone.now()
            pending.extend(_prediction(run_id, endpoint, row, results.get(row["pk"]), input_errors.get(row["pk"], ""),
                                       now) for row in chunk)
            if len(pending) >= write_every and k + 1 < len(slices):  # the last write goes with the done mark
                flush()
    with transaction.atomic():   # the last write, the batch marked done and its audit event: one commit
        flush(final=True)
        if connection.vendor == "postgresql":
            # the rows' deferred foreign-key checks run now (Django's SET CONSTRAINTS ALL IMMEDIATE, then
            # DEFERRED again), not at COMMIT: audit_record takes the audit trail's lock, which every other
            # worker's batch waits on until this transaction ends, and a thousand rows' checks took 18 ms
            connection.check_constraints()
        if all_new:  # everything in this batch was written by this attempt: digest what we wrote
            n_errors, digest_rows = errors, mine
        else:        # an earlier attempt (or a concurrent duplicate) wrote some: digest what is stored
            stored = Prediction.objects.filter(ids_in("variant_id", ids), run=run, endpoint=endpoint)
            n_errors = stored.filter(outcome="error").count()
            digest_rows = list(stored.values_list(*DIGEST_COLUMNS))
        RunBatch.objects.filter(pk=batch_id).update(status=RunBatch.Status.DONE, n_done=len(ids), n_errors=n_errors,
                                                    error="", finished_at=timezone.now())
        audit_record(actor=None, action="workers.batch.complete", object_type="workers.runbatch", object_id=batch_id,
                     after={"run_id": run_id, "endpoint": endpoint.name, "index": batch.index, "variants": len(ids),
                            "written_now": written, "already_done": len(done), "errors": n_errors,
                            "predictions_sha256": _digest(digest_rows)})
    return BatchOutcome(batch_id, "done", written, len(done), errors, run_id=run_id)


def batch_fail(*, batch_id: int, error: str) -> int | None:
    """Record that a batch could not run (bad model configuration, backend down after every
    retry). The run finishes as `failed`; resuming it retries these batches. Returns the run's id."""
    with transaction.atomic():
        RunBatch.objects.filter(pk=batch_id).update(status=RunBatch.Status.FAILED, error=error[:2000],
                                                    finished_at=timezone.now())
        audit_record(actor=None, action="workers.batch.fail", object_type="workers.runbatch", object_id=batch_id,
                     after={"error": error[:500]})
    return RunBatch.objects.filter(pk=batch_id).values_list("run_id", flat=True).first()


__all__ = ["BackendError", "BatchOutcome", "batch_execute", "batch_fail"]
