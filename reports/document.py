"""The model report as ONE JSON-serialisable document holding every number the report shows, section by
section (docs/reports.md). The HTML and the PDF are renderings of it (`reports.render`); signatures bind
to `document_hash(document)`, the SHA-256 of `canonical_json(document)`.

Deterministic: the same runs, release, texts and criteria over the same database state give the same
document, byte for byte in canonical form. The only times in it are those stored on the runs (and on
the release and audit checkpoints); everything is sorted."""
from __future__ import annotations

import hashlib
import json

from django.conf import settings
from django.core.exceptions import ValidationError

from annotation.models import VariantKind
from audit.services import audit_verify
from common.palette import model_colour
from releases.models import Release
from releases.selectors import reference_standard, shortcut_summary
from workers.backends import UnknownBackendError, backend_class
from workers.models import EvaluationRun
from workers.results import KIND_LABELS

from . import criteria as acceptance, finetuning, sections, selectors
from .identity import model_identity

SCHEMA = "medr2.model-report/1"
SECTIONS = (
    ("scope", "Scope and intended use"),
    ("model_identity", "Model identity"),
    ("data", "Data"),
    ("reference_standard", "Reference standard"),
    ("performance", "Performance"),
    ("robustness", "Adversarial robustness and evidence reliance"),
    ("error_analysis", "Error analysis"),
    ("acceptance", "Acceptance criteria"),
    ("limitations", "Limitations"),
    ("logging", "Logging coverage"),
    ("signoff", "Sign-off"),
)
SIGN_OFF_MEANINGS = (
    ("author", "I prepared this report and its numbers are those of the runs and release it names."),
    ("reviewer", "I reviewed the methods, the numbers and the limitations, and found them fit for the stated scope."),
    ("approver", "I approve the model for the intended use stated in section 1, within its limitations."),
)
# blind baselines answer without the image; planted models simulate a known behaviour (workers/backends)
ROLE_MODEL, ROLE_BASELINE, ROLE_PLANTED = "model", "blind baseline", "planted simulation"
LOCAL_WEIGHT_BACKENDS = ("transformers",)


def canonical_json(document: dict) -> bytes:
    """The bytes a report's hash and signatures cover: sorted keys, no spaces, UTF-8, no NaN."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def document_hash(document: dict) -> str:
    return hashlib.sha256(canonical_json(document)).hexdigest()


def model_colours(endpoint_ids) -> dict[int, str]:
    """One fixed colour per model, from its endpoint id (common.palette): the same in every figure and table of
    a report as on the platform's pages and plots."""
    return {pk: model_colour(pk).lower() for pk in endpoint_ids}   # as matplotlib writes it in the SVGs


def _role(backend: str) -> str:
    try:
        cls = backend_class(backend)
    except UnknownBackendError:
        return ROLE_MODEL
    if cls.needs_truth:
        return ROLE_PLANTED
    return ROLE_MODEL if cls.uses_image else ROLE_BASELINE


def _models(runs: list[EvaluationRun]) -> list[dict]:
    entries = []
    for run in runs:
        snapshots = (run.provenance or {}).get("endpoints") or {}
        for pk, label in (run.metrics.get("endpoints") or {}).items():
            snap = snapshots.get(str(pk)) or {}
            entries.append({"key": f"{run.pk}:{pk}", "run": run.pk, "endpoint": int(pk),
                            "name": snap.get("name") or label, "label": label, "backend": snap.get("backend", ""),
                            "role": _role(snap.get("backend", ""))})
    repeated = {e["label"] for e in entries if sum(x["label"] == e["label"] for x in entries) > 1}
    for e in entries:
        if e["label"] in repeated:
            e["label"] = f"{e['label']} (run {e['run']})"
    colours = model_colours(e["endpoint"] for e in entries)
    for e in entries:
        e["colour"] = colours[e["endpoint"]]
    return sorted(entries, key=lambda e: (e["run"], e["name"], e["endpoint"]))


LONGEST_LISTED = 20


def shown_filters(filters: dict | None) -> dict:
    """A run's item filters as the report shows them: a list longer than LONGEST_LISTED (e.g. thousands of item
    ids) becomes its count and the SHA-256 of its canonical JSON, so the scope table stays one line and the
    PDF lays out in seconds (bench/report_scale.py), while the value stays checkable against the run."""
    shown = {}
    for key, value in sorted((filters or {}).items()):
        if isinstance(value, list) and len(value) > LONGEST_LISTED:
            text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            value = {"count": len(value), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
        shown[key] = value
    return shown


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def _run_provenance(run: EvaluationRun, show_names: bool) -> dict:
    prov = run.provenance or {}
    out = {"id": run.pk, "name": run.name, "status": run.status, "complete": bool(run.metrics.get("complete")),
           "split": run.metrics.get("split") or run.split, "created_at": _iso(run.created_at),
           "started_at": _iso(run.started_at), "finished_at": _iso(run.finished_at),
           "scored_at": run.metrics.get("scored_at") or _iso(run.scored_at),
           "bootstrap_seed": run.pk, "item_filters": shown_filters(run.item_filters),
           "variant_kinds": run.variant_kinds or [],
           "n_variants": run.n_variants, "total": run.total, "n_predictions": run.metrics.get("n_predictions"),
           "git_commit": prov.get("git_commit") or prov.get("code_version") or None,
           "train_overlap": prov.get("train_overlap") or {}, "split_rule": prov.get("split") or {}}
    if show_names:
        out["created_by"] = run.created_by.get_username() if run.created_by_id else None
    return out


def _release_summary(release: Release) -> dict:
    return {"name": release.name, "version": release.version, "title": release.title, "status": release.status,
            "description": release.description, "license": release.license, "digest": release.digest,
            "archive_sha256": release.archive_sha256, "public_key": release.public_key,
            "created_date": release.created_date.isoformat() if release.created_date else None,
            "published_at": _iso(release.published_at), "taxonomy_version": release.taxonomy_version,
            "counts": release.counts or {}, "excluded": release.excluded or {}, "audit_head": release.audit_head,
            "previous": release.previous.version if release.previous_id else None, "bump": release.bump}


def _shortcut(summary: dict | None) -> dict | None:
    if not summary:
        return None
    overall = summary.get("overall") or {}
    return {"seq": summary.get("seq"), "split": summary.get("split"), "digest": summary.get("digest"),
            "items": summary.get("items"), "finished": summary.get("finished"),
            "n_scored": overall.get("n_scored"), "patients_scored": overall.get("patients_scored"),
            "chance": overall.get("chance"), "best_blind_baseline": overall.get("best"),
            "image_necessary": overall.get("image_necessary"), "flag": overall.get("flag"),
            "flag_reasons": overall.get("flag_reasons") or []}


def _scope(scope: str, out_of_scope: str, runs, release, counts: dict) -> dict:
    evaluated = sorted({k for r in runs for m in (r.metrics.get("models") or {}).values()
                        for k in ("clean", *(m.get("robustness") or {}))})
    modalities = sorted(k for k in counts["by_modality"] if k != "(none)")
    return {"scope": scope.strip(), "out_of_scope": out_of_scope.strip(),
            "release": release.version if release else None,
            "runs": [{"id": r.pk, "name": r.name, "split": r.metrics.get("split") or r.split,
                      "item_filters": shown_filters(r.item_filters), "variant_kinds": sections.kind_order(evaluated)}
                     for r in runs],
            "not_covered": [
                "Clinical use: patient outcomes, workflow effects and reader behaviour are not measured; the "
                "numbers come from a benchmark.",
                f"Modalities other than {', '.join(modalities) or '(none recorded)'}.",
                "Variant kinds not evaluated: " + (", ".join(KIND_LABELS.get(k, k) for k in VariantKind.values
                                                             if k not in evaluated) or "none") + ".",
            ]}


def _logging(objects: dict) -> dict:
    result = audit_verify()
    checkpoints = sorted(result.checkpoints, key=lambda c: (c.seq, c.id))
    latest = checkpoints[-1] if checkpoints else None
    verification = {"ok": result.ok, "chain_ok": result.chain_ok, "checked": result.checked,
                    "head_seq": result.checked, "head_hash": result.head_hash, "first_bad_seq": result.first_bad_seq,
                    "reason": result.reason, "checkpoints": len(checkpoints), "checkpoints_ok": result.checkpoints_ok,
                    "latest_checkpoint": ({"seq": latest.seq, "head_hash": latest.head_hash, "reason": latest.reason,
                                           "created_at": _iso(latest.created_at), "ok": latest.ok}
                                          if latest else None)}
    return {"verification": verification, "events": selectors.audit_event_counts(objects=objects,
                                                                                 upto_seq=result.checked)}


def report_document(*, runs, release: Release | None = None, scope: str = "", out_of_scope: str = "",
                    limitations: str = "", criteria=None, examples_per_model: int = 2, report: dict | None = None,
                    checkpoint: dict | None = None, criteria_history: list[dict] | None = None) -> dict:
    """Every number of the report for these scored runs (and the release they were evaluated on, if
    any), section by section (SECTIONS). `criteria`: acceptance criteria (reports.criteria).

    A stored version (reports.services) also passes `report` ({"id", "version", "title"}: which report
    and version this is), `checkpoint` (the signed audit checkpoint written for this version: seq,
    head_hash, reason, created_at, public_key, signature) and `criteria_history` (every criteria version
    up to the one judged, each with whether results existed when it was recorded)."""
    runs = sorted(runs, key=lambda r: r.pk)
    if not runs:
        raise ValidationError("a report needs at least one evaluation run")
    unscored = [r.pk for r in runs if not r.metrics or not r.metrics.get("models")]
    if unscored:
        raise ValidationError(f"runs {unscored} have no scored metrics; score them first")
    rules = acceptance.normalise_criteria(criteria)
    show_names = bool(getattr(settings, "MEDR2_REPORT_SHOW_NAMES", False))
    models = _models(runs)
    roles = {m["key"]: m["role"] for m in models}
    item_ids = selectors.scope_item_ids(runs=runs)
    variant_ids = selectors.run_variant_ids(runs=runs)       # read once: 3.7M predictions at the paper's scale
    counts = selectors.data_counts(item_ids=item_ids, runs=runs, variant_ids=variant_ids)
    shortcut = _shortcut(release.shortcut_audit if release is not None else shortcut_summary())

    perf, robust, errors, breakdowns, comparisons, catalogues = {}, {}, {}, {}, [], {}
    for run in runs:
        cells = selectors.run_breakdowns(run=run)
        necessary = {row["endpoint"]: row for row in cells["image_necessary"]}
        examples = selectors.error_examples(run=run, per_model=examples_per_model)
        comparisons += sections.comparisons(run.metrics, run.pk, roles)
        for m in (m for m in models if m["run"] == run.pk):
            stored = run.metrics["models"].get(str(m["endpoint"])) or {}
            perf[m["key"]] = sections.performance(stored, image_necessary=necessary.get(m["endpoint"]))
            robust[m["key"]] = sections.robustness(stored)
            rows = sections.breakdown_rows(cells, m["endpoint"], m["key"])
            for dimension, dim_rows in rows.items():
                breakdowns.setdefault(dimension, []).extend(dim_rows)
            errors[m["key"]] = {**sections.failure_patterns(run.metrics, m["endpoint"]),
                                "examples": examples.get(str(m["endpoint"]), [])}
            catalogues[m["key"]] = acceptance.metric_catalogue(perf[m["key"]], robust[m["key"]], rows)
    results = acceptance.evaluate(rules, models, catalogues)
    snapshots = {f"{r.pk}:{pk}": snap for r in runs
                 for pk, snap in ((r.provenance or {}).get("endpoints") or {}).items()}
    reference = reference_standard(item_ids=item_ids)
    if show_names:
        reference["people"] = selectors.reference_people(item_ids=item_ids)
    objects = selectors.scope_objects(runs=runs, item_ids=item_ids, release=release, variant_ids=variant_ids)
    fine_tuning = finetuning.finetuning_section(runs=runs)     # None unless a run evaluated a fine-tuned model

    doc = {
        "schema": SCHEMA,
        "title": "Model report: " + ", ".join(m["label"] for m in models if m["role"] == ROLE_MODEL)
                 if any(m["role"] == ROLE_MODEL for m in models) else "Model report",
        "as_of": max((r.metrics.get("scored_at") or "") for r in runs) or None,
        "models": models,
        "section_order": [{"number": i, "key": k, "title": t} for i, (k, t) in
                          enumerate(finetuning.section_order(SECTIONS, fine_tuning is not None), start=1)],
        "labels": {**selectors.labels(), "kinds": {k: KIND_LABELS.get(k, k) for k in VariantKind.values}},
        "names_shown": show_names,
        "sections": {
            "scope": _scope(scope, out_of_scope, runs, release, counts),
            "model_identity": {
                "models": {m["key"]: model_identity(snapshots.get(m["key"]) or {"name": m["name"],
                                                                                "backend": m["backend"]},
                                                    role=m["role"], local_weights=m["backend"] in LOCAL_WEIGHT_BACKENDS)
                           for m in models},
                "runs": [_run_provenance(r, show_names) for r in runs]},
            "data": {"release": _release_summary(release) if release is not None else None,
                     "release_coverage": (selectors.release_coverage(release=release, item_ids=item_ids)
                                          if release is not None else None),
                     "evaluated": counts, "shortcut_audit": shortcut,
                     "shortcut_audits_of_items": selectors.shortcut_audit_for(item_ids=item_ids)},
            "reference_standard": {**reference, "open_cases": selectors.open_case_count(item_ids=item_ids),
                                   "frozen_in_release": (release.reference_standard or None) if release else None,
                                   "agreement_scope": "per category, across the platform's double-read cases"},
            "performance": {"models": perf, "breakdowns": breakdowns, "comparisons": comparisons},
            "robustness": {"models": robust,
                           "kinds": sections.kind_order({k for r in robust.values() for k in r["kinds"]})},
            **({finetuning.KEY: fine_tuning} if fine_tuning else {}),
            "error_analysis": {"models": errors, "corrections": selectors.rescore_summary(runs=runs)},
            "acceptance": {"criteria": rules, "criteria_sha256": hashlib.sha256(canonical_json(rules)).hexdigest(),
                           "results": results, "summary": acceptance.summary(results)},
            "limitations": {"author": limitations.strip(), "generated": []},
            "logging": _logging(objects),
            "signoff": {"meanings": [{"meaning": k, "statement": v} for k, v in SIGN_OFF_MEANINGS],
                        "binding": "Each signature names its signer, role, time and meaning and signs the SHA-256 "
                                   "of this document's canonical JSON; a new version carries no old signature."},
        },
    }
    if report is not None:
        doc["report"] = report
    if checkpoint is not None:
        doc["sections"]["logging"]["report_checkpoint"] = checkpoint
    if criteria_history is not None:
        doc["sections"]["acceptance"]["history"] = criteria_history
    doc["sections"]["limitations"]["generated"] = sections.limitations(doc)
    # JSON-pure (string keys, lists): what is hashed now is what a reader of the stored JSON hashes
    return json.loads(canonical_json(doc))
