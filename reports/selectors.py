"""Reads for the model report: the runs and release named, the items a set of runs evaluated, the counts
and breakdowns the metrics do not store, worked examples of errors, adjudicated corrections, and the
audited events of the objects in scope. Everything returns plain, sorted, JSON-ready values, so the
document built from them is the same for the same database state."""
from __future__ import annotations

import base64
import io
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import replace

import numpy as np
from django.conf import settings
from django.db.models import Count, OuterRef, Prefetch, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404
from PIL import Image as PILImage

from adjudication.models import UNDECIDED_STATUSES, AdjudicationCase, CaseReading, PredictionRescore
from annotation.models import Image, QAItem, Stage, TaskCategory, Variant
from annotation.splits import split_for_group
from annotation.storage import resolve
from audit.models import AuditEvent, AuditEventObject
from labelstudio.models import LabelStudioAnnotation
from releases.models import Release, ReleaseItem
from releases.selectors import heavy_fields, release_find
from validity.models import ShortcutAuditItem
from workers.models import EvaluationRun, ModelEndpoint, Prediction
from workers.scoring.metrics import cell_table
from workers.services.scoring import prediction_table

from .formatting import fmt_time
from .models import AcceptanceCriteria, Report, ReportSignature, ReportSignedCopy, ReportVersion

CHUNK = 5000
THUMBNAIL_PX = 160
RAW_OUTPUT_CHARS = 400


def _chunks(values: list, size: int = CHUNK):
    for start in range(0, len(values), size):
        yield values[start:start + size]


# --- what the report is about ---------------------------------------------------------------------------
def run_list_by_ids(*, ids: Iterable[int]) -> tuple[list[EvaluationRun], list[int]]:
    """The runs with these ids, in id order, and the ids that match none."""
    ids = sorted({int(i) for i in ids})
    runs = list(EvaluationRun.objects.filter(pk__in=ids).prefetch_related("endpoints").order_by("pk"))
    return runs, sorted(set(ids) - {r.pk for r in runs})


def release_by_version(*, version: str) -> Release | None:
    return release_find(version=version)


def scope_item_ids(*, runs: list[EvaluationRun]) -> list[int]:
    """The item versions the runs asked about (every prediction names the version it was asked)."""
    ids = Prediction.objects.filter(run__in=[r.pk for r in runs]).order_by().values_list("item_id", flat=True)
    return sorted(set(ids.distinct()))


def labels() -> dict:
    """Stage and category names (codes to names), for the tables' row labels."""
    return {"stages": {str(o): f"{c} {n}" for o, c, n in Stage.objects.values_list("order", "code", "name")},
            "categories": dict(TaskCategory.objects.values_list("code", "name"))}


# --- data ---------------------------------------------------------------------------------------------
def _counted(values) -> dict:
    return dict(sorted(Counter(v if v not in (None, "") else "(none)" for v in values).items()))


def data_counts(*, item_ids: list[int], runs: list[EvaluationRun], variant_ids: set[int] | None = None) -> dict:
    """What was evaluated: items, chains, images, patients, variants and predictions, and the items per
    stage, category, modality, body region and patient-level split; the de-identification records of the
    images (profile and what was done, never a removed value)."""
    rows, image_ids, chains = [], set(), set()
    for chunk in _chunks(item_ids):
        for row in QAItem.objects.filter(pk__in=chunk).values_list(
                "stage__code", "category__code", "chain__image__modality", "chain__image__body_region",
                "chain__image__split_group", "chain__image_id", "chain_id", "image_necessary"):
            rows.append(row)
            image_ids.add(row[5])
            chains.add(row[6])
    groups = {r[4] or f"image:{r[5]}" for r in rows}
    deid = defaultdict(lambda: {"images": 0, "dummied": 0, "emptied": 0, "removed": 0, "uids_remapped": 0,
                                "private_removed": 0})
    from_dicom = 0
    for chunk in _chunks(sorted(image_ids)):
        for fmt, record in Image.objects.filter(pk__in=chunk).values_list("source_format", "deid"):
            record = record or {}
            profile = record.get("profile") or ("none needed (not DICOM)" if fmt != "dicom" else "(not recorded)")
            entry = deid[profile]
            entry["images"] += 1
            from_dicom += fmt == "dicom"
            for key, n in (record.get("counts") or {}).items():
                if key in entry:
                    entry[key] += int(n or 0)
    predictions = Prediction.objects.filter(run__in=[r.pk for r in runs])
    return {
        "items": len(rows), "chains": len(chains), "images": len(image_ids), "patients": len(groups),
        "variants": len(run_variant_ids(runs=runs) if variant_ids is None else variant_ids),
        "predictions": predictions.count(),
        "by_stage": _counted(r[0] for r in rows), "by_category": _counted(r[1] for r in rows),
        "by_modality": _counted(r[2] for r in rows), "by_body_region": _counted(r[3] for r in rows),
        "by_split": _counted(split_for_group(r[4] or "") for r in rows),
        "image_necessary": {"yes": sum(r[7] is True for r in rows), "no": sum(r[7] is False for r in rows),
                            "not_assessed": sum(r[7] is None for r in rows)},
        "deidentification": {"images_from_dicom": from_dicom,
                             "profiles": {k: dict(sorted(v.items())) for k, v in sorted(deid.items())}},
    }


def release_coverage(*, release: Release, item_ids: list[int]) -> dict:
    """How many evaluated item versions are the exact versions frozen in the release."""
    frozen = set(ReleaseItem.objects.filter(release=release).values_list("item_id", flat=True))
    inside = len(frozen & set(item_ids))
    return {"release_items": len(frozen), "evaluated_in_release": inside,
            "evaluated_not_in_release": len(item_ids) - inside, "release_items_not_evaluated": len(frozen) - inside}


# --- breakdowns the stored metrics do not hold (clean variants, same bootstrap as the scoring) -------------
def run_breakdowns(*, run: EvaluationRun) -> dict:
    """Per model, clean variants only: accuracy with its 95% cluster-bootstrap interval by modality, body
    region and category, and on the image-necessary subset. The stored `by_modality` / `by_category`
    cells pool every variant kind, so these are computed here with the scoring's own `cell_table` and the
    run's seed (body region rides in the table's modality column: the group-by takes named columns only)."""
    clean = prediction_table(run=run, kinds=("clean",))     # the clean rows only: a tenth of a full run's
    if not len(clean):
        return {"modality": [], "body_region": [], "category": [], "image_necessary": []}
    out = {"modality": cell_table(clean, ("endpoint", "modality"), seed=run.pk),
           "category": cell_table(clean, ("endpoint", "category"), seed=run.pk)}
    items = np.unique(clean.item).tolist()
    region, necessary = {}, {}
    for chunk in _chunks(items):
        for pk, body, nec in QAItem.objects.filter(pk__in=chunk).values_list(
                "pk", "chain__image__body_region", "image_necessary"):
            region[pk], necessary[pk] = body or "(none)", nec is True
    regions = np.array([region.get(int(i), "(none)") for i in clean.item], dtype=str)
    by_region = cell_table(replace(clean, modality=regions), ("endpoint", "modality"), seed=run.pk)
    out["body_region"] = [{**{k: v for k, v in row.items() if k != "modality"}, "body_region": row["modality"]}
                          for row in by_region]
    mask = np.array([necessary.get(int(i), False) for i in clean.item], dtype=bool)
    out["image_necessary"] = cell_table(clean.take(mask), ("endpoint",), seed=run.pk) if mask.any() else []
    return out


# --- error analysis -------------------------------------------------------------------------------------
def _answer_text(outcome: str, parsed, options: list) -> str:
    if outcome != "answered":
        return outcome
    letters = [parsed] if isinstance(parsed, str) else parsed
    if isinstance(letters, list) and letters and all(isinstance(x, str) and len(x) == 1 for x in letters):
        texts = [str(options[ord(x.upper()) - 65]) for x in letters if 0 <= ord(x.upper()) - 65 < len(options)]
        if texts:
            return ", ".join(texts)
    if isinstance(parsed, list) and len(parsed) == 4:
        return "box [" + ", ".join(f"{float(v):g}" for v in parsed) + "]"
    return str(parsed)


def _thumbnail(rel_path: str, burned_in: str) -> dict:
    """A small de-identified PNG (the stored rendering, never the source file) as a data URI; withheld
    when the image is flagged with burned-in text. PNG bytes are fixed for fixed pixels (no metadata)."""
    if str(burned_in).upper() == "YES":
        return {"withheld": "burned-in annotation flagged"}
    try:
        with PILImage.open(resolve(rel_path)) as img:
            img = img.convert("L")
            img.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX), PILImage.Resampling.LANCZOS)
            buf = io.BytesIO()
            img.save(buf, format="PNG", optimize=False, compress_level=9)
    except (OSError, ValueError):
        return {"withheld": "image file missing from storage"}
    return {"png_base64": base64.b64encode(buf.getvalue()).decode("ascii")}


def error_examples(*, run: EvaluationRun, per_model: int = 2) -> dict[str, list[dict]]:
    """Per endpoint id: up to `per_model` wrong clean answers, latest stage first (then item id), each with
    the chain's clean steps as that model answered them, its raw output and a thumbnail."""
    out = {}
    wrong = (Prediction.objects.filter(run=run, variant__kind="clean", correct=False)
             .order_by("endpoint_id", "-item__stage__order", "item_id", "id"))
    for endpoint_id in sorted(run.endpoints.values_list("pk", flat=True)):
        picked = list(wrong.filter(endpoint_id=endpoint_id).values_list("pk", "item__chain_id")[:50])
        seen_chains, chosen = set(), []
        for pk, chain in picked:   # one example per chain: a second one would repeat the same steps
            if chain not in seen_chains:
                seen_chains.add(chain)
                chosen.append(pk)
            if len(chosen) == per_model:
                break
        out[str(endpoint_id)] = [_example(run, pk) for pk in chosen]
    return out


def _example(run: EvaluationRun, pk: int) -> dict:
    p = Prediction.objects.select_related("item__stage", "item__category", "item__chain__image", "variant").get(pk=pk)
    image = p.item.chain.image
    steps = []
    for q in (Prediction.objects.filter(run=run, endpoint_id=p.endpoint_id, variant__kind="clean",
                                        item__chain_id=p.item.chain_id)
              .select_related("item__stage", "item__category", "variant").order_by("item__step", "item_id", "id")):
        steps.append({"step": q.item.step, "stage": q.item.stage.order, "category": q.item.category.code,
                      "question": q.item.question, "gold": _gold_text(q.item.gold_answer),
                      "answer": _answer_text(q.outcome, q.parsed, list(q.variant.options or [])),
                      "correct": q.correct, "is_example": q.pk == p.pk})
    return {"prediction": p.pk, "item": p.item_id, "item_version": p.item.version, "chain": p.item.chain_id,
            "stage": p.item.stage.order, "category": p.item.category.code, "outcome": p.outcome,
            "parse_method": p.parse_method, "raw_output": p.raw_output[:RAW_OUTPUT_CHARS],
            "raw_output_truncated": len(p.raw_output) > RAW_OUTPUT_CHARS, "image_sha256": image.sha256,
            "modality": image.modality, "body_region": image.body_region,
            "thumbnail": _thumbnail(image.file, (image.metadata or {}).get("burned_in_annotation", "")),
            "steps": steps}


def _gold_text(gold) -> str:
    if isinstance(gold, list) and len(gold) == 4 and all(isinstance(v, (int, float)) for v in gold):
        return "box [" + ", ".join(f"{float(v):g}" for v in gold) + "]"
    if isinstance(gold, list):
        return ", ".join(str(v) for v in gold)
    return str(gold)


def rescore_summary(*, runs: list[EvaluationRun], limit: int = 20) -> dict:
    """Adjudicated corrections that changed a score in these runs: counts per run and endpoint and
    direction, and the first `limit` of them (case, item, before and after)."""
    rows = (PredictionRescore.objects.filter(prediction__run__in=[r.pk for r in runs])
            .order_by("id").values_list("prediction__run_id", "prediction__endpoint_id", "correct_before",
                                        "correct_after", "iou_before", "iou_after", "case_id",
                                        "prediction__item_id", "gold_item_id", "reason"))
    counts: dict = defaultdict(lambda: {"wrong_to_right": 0, "right_to_wrong": 0, "iou_only": 0})
    listed = []
    for run_id, endpoint_id, before, after, iou_b, iou_a, case, item, gold_item, reason in rows.iterator(CHUNK):
        key = f"{run_id}:{endpoint_id}"
        direction = ("wrong_to_right" if after and not before else "right_to_wrong" if before and not after
                     else "iou_only")
        counts[key][direction] += 1
        if len(listed) < limit:
            listed.append({"model": key, "case": case, "item": item, "gold_item": gold_item, "direction": direction,
                           "correct_before": before, "correct_after": after, "iou_before": iou_b, "iou_after": iou_a,
                           "reason": reason})
    return {"by_model": {k: counts[k] for k in sorted(counts)}, "corrections": listed,
            "total": sum(sum(v.values()) for v in counts.values())}


def open_case_count(*, item_ids: list[int]) -> int:
    """Undecided adjudication cases on the evaluated items (any version of them)."""
    keys = set()
    for chunk in _chunks(item_ids):
        keys.update(QAItem.objects.filter(pk__in=chunk).values_list("item_key", flat=True))
    return sum(AdjudicationCase.objects.filter(status__in=UNDECIDED_STATUSES, item_key__in=chunk).count()
               for chunk in _chunks(sorted(keys, key=str)))


def reference_people(*, item_ids: list[int]) -> dict:
    """Usernames of the annotators and adjudicators of these items: only when the setting
    MEDR2_REPORT_SHOW_NAMES allows names in reports (otherwise the report holds roles and counts)."""
    if not getattr(settings, "MEDR2_REPORT_SHOW_NAMES", False):
        return {}
    image_ids = set()
    for chunk in _chunks(item_ids):
        image_ids.update(QAItem.objects.filter(pk__in=chunk).values_list("chain__image_id", flat=True))
    annotators = (LabelStudioAnnotation.objects.filter(task__image_id__in=sorted(image_ids), status="active")
                  .exclude(author=None).values_list("author__username", flat=True).distinct())
    readers = (CaseReading.objects.filter(case__item_id__in=item_ids, status=CaseReading.Status.SUBMITTED)
               .values_list("reader__username", flat=True).distinct())
    return {"annotators": sorted(set(annotators)), "adjudicators": sorted(set(readers))}


# --- logging coverage -------------------------------------------------------------------------------------
def run_variant_ids(*, runs: list[EvaluationRun]) -> set[int]:
    """The variants the runs' predictions are on, streamed into a set (bounded by variants, not predictions).
    Not `SELECT DISTINCT`: at the paper's scale (3.7M predictions, 265k variants) that sort spills past
    PostgreSQL's default work_mem and took minutes (bench/report_scale.py)."""
    found: set[int] = set()
    rows = Prediction.objects.filter(run__in=[r.pk for r in runs]).order_by().values_list("variant_id", flat=True)
    for variant_id in rows.iterator(chunk_size=20_000):
        found.add(variant_id)
    return found


def scope_objects(*, runs: list[EvaluationRun], item_ids: list[int], release: Release | None,
                  variant_ids: set[int] | None = None) -> dict[str, list[str]]:
    """The audited object types and ids in scope: the runs, their models, the evaluated item versions,
    their chains and images, their variants (`variant_ids` when the caller has read them already), adjudication
    cases on them and the release."""
    chains, images, keys = set(), set(), set()
    for chunk in _chunks(item_ids):
        for chain, image, key in QAItem.objects.filter(pk__in=chunk).values_list("chain_id", "chain__image_id",
                                                                                 "item_key"):
            chains.add(chain)
            images.add(image)
            keys.add(key)
    variants = run_variant_ids(runs=runs) if variant_ids is None else variant_ids
    cases = set()
    for chunk in _chunks(sorted(keys, key=str)):
        cases.update(AdjudicationCase.objects.filter(item_key__in=chunk).values_list("pk", flat=True))
    objects = {
        EvaluationRun._meta.label_lower: [r.pk for r in runs],
        ModelEndpoint._meta.label_lower: sorted({e.pk for r in runs for e in r.endpoints.all()}),
        QAItem._meta.label_lower: item_ids, "annotation.chain": sorted(chains),
        Image._meta.label_lower: sorted(images), Variant._meta.label_lower: sorted(variants),
        # case events name their case by the model label; the bulk ones (assignments, detection) by
        # "adjudication.case" (adjudication/services): both are looked up
        AdjudicationCase._meta.label_lower: sorted(cases), "adjudication.case": sorted(cases),
    }
    if release is not None:
        objects[Release._meta.label_lower] = [release.pk]
    return {t: [str(i) for i in sorted(ids)] for t, ids in sorted(objects.items())}


def audit_event_counts(*, objects: dict[str, list[str]], upto_seq: int) -> dict:
    """Audited events (seq <= `upto_seq`) whose own object, or one of whose touched objects (bulk events),
    is in scope: counts per action, and per object type how many objects in scope have at least one."""
    actions: dict[int, str] = {}
    covered: dict[str, set] = defaultdict(set)
    for object_type, ids in objects.items():
        for chunk in _chunks(ids):
            for pk, action, object_id in AuditEvent.objects.filter(
                    object_type=object_type, object_id__in=chunk, seq__lte=upto_seq).values_list(
                    "pk", "action", "object_id").iterator(CHUNK):
                actions[pk] = action
                covered[object_type].add(object_id)
            for pk, action, object_id in AuditEventObject.objects.filter(
                    object_type=object_type, object_id__in=chunk, event__seq__lte=upto_seq).values_list(
                    "event_id", "event__action", "object_id").iterator(CHUNK):
                actions[pk] = action
                covered[object_type].add(object_id)
    return {"events": len(actions), "by_action": dict(sorted(Counter(actions.values()).items())),
            "by_object_type": {t: {"objects": len(ids), "with_events": len(covered[t])}
                               for t, ids in objects.items()}}


def audit_head_seq() -> int:
    return AuditEvent.objects.order_by("-seq").values_list("seq", flat=True).first() or 0


def shortcut_audit_for(*, item_ids: list[int]) -> dict:
    """Which stored shortcut audits judged the evaluated item versions (their image-necessary flags)."""
    seqs = Counter()
    for chunk in _chunks(item_ids):
        seqs.update(ShortcutAuditItem.objects.filter(item_id__in=chunk).values_list("audit__seq", flat=True))
    return {str(k): v for k, v in sorted(seqs.items())}


# --- the report's lifecycle: reports, criteria, versions, signatures (reports.models) ---------------------
# the files are megabytes: lists and pages never load them (`version_file` reads one)
VERSION_FILES = ("document_json", "html", "pdf")
LIGHT_RUN_FIELDS = ("id", "name", "status", "split", "scored_at", "created_at")


def _light_runs() -> Prefetch:
    return Prefetch("runs", queryset=EvaluationRun.objects.only(*LIGHT_RUN_FIELDS).order_by("pk"))


def _reports() -> QuerySet[Report]:
    """Reports with their author, their release (named: not its heavy JSON) and their runs (light)."""
    return (Report.objects.select_related("created_by", "release").defer(*heavy_fields("release__"))
            .prefetch_related(_light_runs()))


def report_list() -> QuerySet[Report]:
    """Reports, newest first, each with its latest version's number, status, verdict and signature count."""
    latest = ReportVersion.objects.filter(report=OuterRef("pk")).order_by("-number")
    signed = (ReportSignature.objects.filter(version_id=OuterRef("latest_id")).order_by().values("version_id")
              .annotate(n=Count("id")).values("n"))
    return (_reports().annotate(latest_id=Subquery(latest.values("pk")[:1]),
                                latest_number=Subquery(latest.values("number")[:1]),
                                latest_status=Subquery(latest.values("status")[:1]),
                                latest_verdict=Subquery(latest.values("summary__verdict")[:1]))
            .annotate(latest_signatures=Coalesce(Subquery(signed), 0)).order_by("-created_at", "-id"))


def report_get(*, pk: int) -> Report:
    return get_object_or_404(_reports(), pk=pk)


def report_runs(*, report: Report) -> list[EvaluationRun]:
    """The report's runs, whole (metrics and provenance: what the document reads), in id order."""
    return run_list_by_ids(ids=report.runs.values_list("pk", flat=True))[0]


def version_list(*, report: Report) -> QuerySet[ReportVersion]:
    return (ReportVersion.objects.filter(report=report).defer(*VERSION_FILES)
            .select_related("criteria", "checkpoint", "created_by")
            .annotate(n_signatures=Count("signatures")).order_by("-number"))


def version_get(*, pk: int) -> ReportVersion:
    return get_object_or_404(ReportVersion.objects.select_related(
        "report", "report__release", "criteria", "checkpoint", "created_by").defer(
        *VERSION_FILES, *heavy_fields("report__release__")), pk=pk)


def version_file(*, pk: int, field: str) -> bytes | None:
    """One stored file of a version (document_json, html or pdf), or None when it has none."""
    if field not in VERSION_FILES:
        raise ValueError(field)
    row = ReportVersion.objects.filter(pk=pk).values_list(field, flat=True).first()
    return bytes(row) if row is not None else None


def version_progress(*, pk: int) -> dict:
    """What the report page polls while a version is generated: {status, step, done, total, error}."""
    row = get_object_or_404(ReportVersion.objects.values("status", "progress", "error"), pk=pk)
    progress = row["progress"] or {}
    return {"status": row["status"], "step": progress.get("step", ""), "done": progress.get("done", 0),
            "total": progress.get("total", 0), "error": row["error"]}


def signature_list(*, version: ReportVersion) -> QuerySet[ReportSignature]:
    return ReportSignature.objects.filter(version=version).select_related("signer").order_by("signed_at", "id")


def signed_copy_latest(*, version: ReportVersion, ready: bool = False) -> ReportSignedCopy | None:
    """The version's newest signed copy (`ready`: the newest one built)."""
    rows = ReportSignedCopy.objects.filter(version=version).defer("pdf").order_by("-id")
    return (rows.filter(status="ready") if ready else rows).first()


def signed_copy_get(*, pk: int) -> ReportSignedCopy:
    return get_object_or_404(ReportSignedCopy.objects.select_related("version", "version__report").defer(
        *(f"version__{f}" for f in VERSION_FILES)), pk=pk)


def signed_copy_pdf(*, pk: int) -> bytes | None:
    row = ReportSignedCopy.objects.filter(pk=pk).values_list("pdf", flat=True).first()
    return bytes(row) if row is not None else None


def criteria_list(*, report: Report) -> QuerySet[AcceptanceCriteria]:
    return AcceptanceCriteria.objects.filter(report=report).select_related("created_by").order_by("number")


def criteria_current(*, report: Report) -> AcceptanceCriteria | None:
    return AcceptanceCriteria.objects.filter(report=report).order_by("-number").first()


def results_evidence(*, report: Report) -> list[str]:
    """The results of this report that exist now (its scored runs, its generated versions): what makes a
    criteria change one made after results existed."""
    runs = [f"run {pk} scored {fmt_time(at.isoformat())}" for pk, at in
            report.runs.exclude(scored_at=None).order_by("pk").values_list("pk", "scored_at")]
    versions = [f"report version {n} generated {fmt_time(at.isoformat())}" for n, at in
                ReportVersion.objects.filter(report=report).order_by("number").values_list("number", "created_at")]
    return runs + versions


def report_run_choices() -> list[tuple[str, str]]:
    """The report form's runs (not cancelled), newest first: (id, label with status)."""
    rows = (EvaluationRun.objects.exclude(status=EvaluationRun.Status.CANCELLED).order_by("-pk")
            .values_list("pk", "name", "status", "scored_at")[:500])
    return [(str(pk), f"#{pk} {name} · {status}{' · scored' if scored else ' · not scored yet'}")
            for pk, name, status, scored in rows]


def report_release_choices() -> list[tuple[str, str]]:
    return [(str(pk), f"{name} {version} ({status})") for pk, name, version, status in
            Release.objects.order_by("-created_at", "-id").values_list("pk", "name", "version", "status")[:200]]


def release_by_pk(*, pk: int) -> Release | None:
    return Release.objects.filter(pk=pk).first()


def files_with_sha256(*, sha256: str) -> tuple[list[tuple[str, ReportVersion]], list[ReportSignedCopy]]:
    """Stored files with this SHA-256: (kind, version) for a version's pdf / json / html, and signed copies."""
    versions = []
    for kind, field in (("pdf", "pdf_sha256"), ("json", "json_sha256"), ("html", "html_sha256")):
        versions += [(kind, v) for v in ReportVersion.objects.filter(**{field: sha256}).select_related("report")
                     .defer(*VERSION_FILES).order_by("pk")]
    copies = list(ReportSignedCopy.objects.filter(pdf_sha256=sha256).defer("pdf").order_by("pk"))
    return versions, copies


def version_find(*, pk: int | None = None, report_id: int | None = None, number: int | None = None,
                 document_hash: str | None = None) -> ReportVersion | None:
    """A version by id, by (report id, number) or by document hash; None when there is none."""
    rows = ReportVersion.objects.select_related("report", "checkpoint").defer(*VERSION_FILES).order_by("pk")
    if pk is not None:
        return rows.filter(pk=pk).first()
    if document_hash is not None:
        return rows.filter(document_hash=document_hash).first()
    return rows.filter(report_id=report_id, number=number).first()


def signature_events(*, signature_ids: Iterable[int]) -> dict[str, dict]:
    """The `reports.signature.create` audit event of each signature: object id -> its `after` payload."""
    return {object_id: after for object_id, after in AuditEvent.objects.filter(
        action="reports.signature.create", object_type=ReportSignature._meta.label_lower,
        object_id__in=[str(i) for i in signature_ids]).values_list("object_id", "after")}


def signature_refusals_since(*, user, since) -> int:
    """How many signatures this user was refused since then (the wrong-password throttle counts them)."""
    return AuditEvent.objects.filter(action="reports.signature.refused", actor=user, created_at__gte=since).count()
