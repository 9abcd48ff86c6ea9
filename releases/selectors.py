"""Reads for releases: which items a release would hold (and why others are left out), the release
list and pages, and the frozen snapshot a build writes (releases.package.snapshot)."""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import date

from django.db import connection
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404
from django.utils import timezone

from adjudication.models import UNDECIDED_STATUSES, AdjudicationCase
from adjudication.selectors import agreement_summary
from annotation.models import Chain, Image, QAItem, Stage, TaskCategory, Variant
from annotation.selectors import ITEM_LOOKUPS
from annotation.splits import split_for_group
from audit.models import AuditEvent
from common.filters import filter_by
from labelstudio.models import LabelStudioAnnotation
from validity.selectors import shortcut_audit_latest_done

from .models import Release, ReleaseItem
from .semver import bump_for, parse

# why a current item is left out; the admin may include the last three explicitly
NOT_REVIEWED, REJECTED, AMBIGUOUS, OPEN_CASE = "not_reviewed", "rejected", "ambiguous", "open_case"
INCLUDABLE = (REJECTED, AMBIGUOUS, OPEN_CASE)
RELEASE_LOOKUPS = {**{k: v for k, v in ITEM_LOOKUPS.items() if k not in ("status", "chain")},
                   "source_dataset": "chain__image__source_dataset"}


def release_list() -> QuerySet[Release]:
    """Releases, newest first, each with `n_items`: a count per release shown (not a join of every release's
    items grouped, which the list's own count would repeat)."""
    n_items = (ReleaseItem.objects.filter(release=OuterRef("pk")).order_by().values("release")
               .annotate(n=Count("id")).values("n")[:1])
    return (Release.objects.select_related("previous", "created_by").annotate(n_items=Coalesce(Subquery(n_items), 0))
            .order_by("-created_at", "-id"))


def release_get(*, pk: int, with_changes: bool = False) -> Release:
    """One release with its people and previous release; its changelog (megabytes at scale) only
    `with_changes` (the API's detail): the page reads it a page at a time (`release_change_rows`)."""
    rows = Release.objects.select_related("previous", "created_by", "published_by")
    return get_object_or_404(rows if with_changes else rows.defer("changes"), pk=pk)


def release_find(*, version: str) -> Release | None:
    return Release.objects.filter(version=version).first()


def release_latest(*, exclude_pk: int | None = None) -> Release | None:
    """The most recent release by version order (any status but failed drafts still count)."""
    versions = [(pk, v) for pk, v in Release.objects.exclude(pk=exclude_pk).values_list("pk", "version") if v]
    latest = max(versions, key=lambda row: parse(row[1]), default=None)
    return release_rows().get(pk=latest[0]) if latest else None


def gold_hash(gold) -> str:
    return hashlib.sha256(json.dumps(gold, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def split_of(split_group: str) -> str:
    """The patient-level split, exactly as runs and scoring compute it (annotation.splits)."""
    return split_for_group(split_group or "")


def release_candidates(*, filters: dict, include: set[str]) -> tuple[list[dict], dict]:
    """The current item versions a release would hold, and what is left out.

    Returns (rows, excluded): rows are {"item_id", "item_key", "version", "gold_hash", "split",
    "included_anyway"}; excluded counts the items left out per reason and those included anyway."""
    include = set(include) & set(INCLUDABLE)
    open_keys = set(AdjudicationCase.objects.filter(status__in=UNDECIDED_STATUSES, item_key__isnull=False)
                    .values_list("item_key", flat=True))
    qs = filter_by(QAItem.objects.filter(is_current=True), filters, RELEASE_LOOKUPS).order_by("pk")
    rows, left_out, anyway = [], Counter(), Counter()
    for pk, key, version, status, gold, group in qs.values_list(
            "pk", "item_key", "version", "status", "gold_answer", "chain__image__split_group").iterator(2000):
        reason = ""
        if status == QAItem.Status.REJECTED:
            reason = REJECTED
        elif status == QAItem.Status.AMBIGUOUS:
            reason = AMBIGUOUS
        elif status != QAItem.Status.APPROVED:
            reason = NOT_REVIEWED
        elif key in open_keys:
            reason = OPEN_CASE
        if reason and reason not in include:
            left_out[reason] += 1
            continue
        if reason:
            anyway[reason] += 1
        rows.append({"item_id": pk, "item_key": key, "version": version, "gold_hash": gold_hash(gold),
                     "split": split_of(group), "included_anyway": reason})
    return rows, {"left_out": dict(sorted(left_out.items())), "included_anyway": dict(sorted(anyway.items()))}


def release_changes(*, rows: list[dict], previous: Release | None) -> tuple[list[dict], dict]:
    """The changelog against `previous` (added / removed / changed, each with its reason) and the
    counts the semver rule reads."""
    if previous is None:
        return [], {"added": len(rows), "removed": 0, "changed": 0, "gold_changed": 0, "first": True}
    before = {str(k): (v, g) for k, v, g in previous.items.values_list("item_key", "item_version", "gold_hash")}
    now = {str(r["item_key"]): r for r in rows}
    changes, counts = [], Counter()
    changed_ids = {r["item_id"] for k, r in now.items() if k in before and before[k][0] != r["version"]}
    reasons = _change_reasons(changed_ids)
    for key in sorted(set(before) | set(now)):
        if key not in before:
            counts["added"] += 1
            changes.append({"kind": "added", "item_key": key, "from_version": None,
                            "to_version": now[key]["version"], "reason": "new approved item"})
        elif key not in now:
            counts["removed"] += 1
            changes.append({"kind": "removed", "item_key": key, "from_version": before[key][0], "to_version": None,
                            "reason": "no longer approved, or left out by the selection"})
        elif before[key][0] != now[key]["version"]:
            gold = before[key][1] != now[key]["gold_hash"]
            counts["changed"] += 1
            counts["gold_changed"] += int(gold)
            changes.append({"kind": "changed", "item_key": key, "from_version": before[key][0],
                            "to_version": now[key]["version"], "gold_changed": gold,
                            "reason": reasons.get(now[key]["item_id"], "edited")})
    return changes, {"added": counts["added"], "removed": counts["removed"], "changed": counts["changed"],
                     "gold_changed": counts["gold_changed"], "first": False}


def _change_reasons(item_ids: set[int]) -> dict[int, str]:
    """Why each item version exists: the adjudication verdict that made it, else its change reason."""
    reasons = dict(QAItem.objects.filter(pk__in=item_ids).values_list("pk", "change_reason"))
    for case_id, item_id, outcome in AdjudicationCase.objects.filter(result_item_id__in=item_ids).values_list(
            "pk", "result_item_id", "outcome"):
        reasons[item_id] = f"adjudication case {case_id}: gold {outcome}"
    return {k: (v or "edited") for k, v in reasons.items()}


def release_diff(*, older: Release, newer: Release) -> dict:
    """The changes from `older` to `newer` (their frozen item versions) and the bump the rule asks for."""
    rows = [{"item_id": i, "item_key": k, "version": v, "gold_hash": g} for i, k, v, g in
            newer.items.values_list("item_id", "item_key", "item_version", "gold_hash")]
    changes, counts = release_changes(rows=rows, previous=older)
    bump = bump_for(removed=counts["removed"], gold_changed=counts["gold_changed"], added=counts["added"],
                    changed=counts["changed"])
    return {"from": older.version, "to": newer.version, "changes": changes, "bump": bump,
            "counts": {k: counts[k] for k in ("added", "removed", "changed", "gold_changed")}}


def taxonomy() -> tuple[list[dict], str]:
    """The taxonomy as frozen into a release, and its version (SHA-256 of the canonical form)."""
    stages = dict(Stage.objects.values_list("code", "name"))
    rows = [{"stage": s, "stage_name": stages.get(s, s), "category": c, "category_name": n, "answer_type": a,
             "rule": r} for c, n, s, a, r in TaskCategory.objects.order_by("order", "code").values_list(
                 "code", "name", "stage__code", "answer_type", "rule")]
    version = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()
    return [{k: v for k, v in r.items() if k != "rule"} for r in rows], version


def audit_head() -> str:
    last = AuditEvent.objects.order_by("-seq").values_list("hash", flat=True).first()
    return last or ""


def reference_standard(*, item_ids: list[int]) -> dict:
    """Who made the reference standard (roles and counts, never names), the agreement figures and
    the adjudication outcomes, for these items."""
    items = QAItem.objects.filter(pk__in=item_ids)
    image_ids = set(items.values_list("chain__image_id", flat=True))
    annotators = (LabelStudioAnnotation.objects.filter(task__image_id__in=image_ids, status="active")
                  .exclude(author=None).values("author").distinct().count())
    cases = AdjudicationCase.objects.filter(item__in=items)
    outcomes = dict(cases.exclude(outcome="").values_list("outcome").annotate(n=Count("id")).values_list(
        "outcome", "n"))
    adjudicators = (cases.filter(readings__status="submitted").values("readings__reader").distinct().count())
    agreement = {row.category: {"cases": row.cases, "double_read": row.double_read, "cohen_kappa": row.cohen,
                                "fleiss_kappa": row.fleiss, "krippendorff_alpha": row.alpha}
                 for row in agreement_summary() if row.double_read}
    return {"annotators": annotators, "adjudicators": adjudicators, "adjudication_outcomes": dict(sorted(
        outcomes.items())), "agreement": agreement, "gold_source": "phantom ground truth, curator review, "
            "radiologists' boxes from Label Studio, adjudicated corrections"}


def shortcut_summary() -> dict | None:
    audit = shortcut_audit_latest_done()
    if audit is None or not audit.results:
        return None
    overall = audit.results.get("overall", {})
    return {"seq": audit.seq, "split": audit.split, "digest": audit.digest, "items": audit.item_count,
            "overall": overall, "finished": audit.finished_at.date().isoformat() if audit.finished_at else ""}


def release_counts(*, release: Release) -> dict:
    items = QAItem.objects.filter(pk__in=ReleaseItem.objects.filter(release=release).values("item_id"))
    by = {
        "stage": items.values_list("stage__code"), "category": items.values_list("category__code"),
        "modality": items.values_list("chain__image__modality"),
    }
    out = {name: dict(sorted(Counter(v for (v,) in qs).items())) for name, qs in by.items()}
    out["split"] = dict(sorted(Counter(ReleaseItem.objects.filter(release=release).values_list(
        "split", flat=True)).items()))
    out["items"] = items.count()
    out["variants"] = Variant.objects.filter(item__in=items).count()
    out["images"] = items.values("chain__image_id").distinct().count()
    return out


def today() -> date:
    return timezone.now().date()


# --- pages: reads for the release pages and API (releases/views.py, releases/apis.py) -----------------
# heavy JSON columns a list never shows (a changelog may hold 100k entries: megabytes)
HEAVY_FIELDS = ("changes", "taxonomy", "reference_standard", "excluded", "selection", "shortcut_audit")
COUNT_DIMENSIONS = (("stage", "Stage"), ("category", "Category"), ("modality", "Modality"), ("split", "Split"))
CHANGE_KINDS = ("added", "removed", "changed")


def heavy_fields(prefix: str = "") -> tuple[str, ...]:
    """The heavy JSON fields for `.defer()`, named through a relation (`heavy_fields("release__")`) where
    another model's rows select their release with them."""
    return tuple(prefix + name for name in HEAVY_FIELDS)


def release_rows() -> QuerySet[Release]:
    """Releases without their heavy JSON: for lists, choices and the rows that only name a release."""
    return Release.objects.defer(*HEAVY_FIELDS)


def release_summaries() -> QuerySet[Release]:
    """The release list without its heavy JSON."""
    return release_list().defer(*HEAVY_FIELDS)


def release_progress(*, pk: int) -> dict:
    """What the release page polls while a build runs: {status, step, done, total, error}."""
    row = get_object_or_404(Release.objects.values("status", "progress", "error"), pk=pk)
    progress = row["progress"] or {}
    return {"status": row["status"], "step": progress.get("step", ""), "done": progress.get("done", 0),
            "total": progress.get("total", 0), "error": row["error"]}


def _current_item_values(field: str) -> list[str]:
    """The non-empty values of an image column among current items, sorted. Each distinct value of the
    image table (a handful) is probed for one current item, instead of a DISTINCT over every current item
    joined to its image (100k rows at the paper's scale)."""
    qn = connection.ops.quote_name
    image, chain, item = (qn(model._meta.db_table) for model in (Image, Chain, QAItem))
    column = qn(Image._meta.get_field(field).column)
    item_chain, chain_image = (qn(model._meta.get_field(name).column) for model, name in ((QAItem, "chain"),
                                                                                          (Chain, "image")))
    sql = (f"SELECT p.v FROM (SELECT DISTINCT {column} AS v FROM {image} WHERE {column} <> '') p "
           f"WHERE (SELECT q.id FROM {item} q JOIN {chain} c ON q.{item_chain} = c.id "
           f"JOIN {image} i ON c.{chain_image} = i.id WHERE i.{column} = p.v AND q.is_current = %s LIMIT 1) "
           "IS NOT NULL ORDER BY p.v")
    with connection.cursor() as cursor:
        cursor.execute(sql, [True])
        return [v for (v,) in cursor.fetchall()]


def release_filter_choices() -> dict[str, list[tuple[str, str]]]:
    """The release form's selects, (value, label): stages and categories of the taxonomy; the modalities
    and source datasets of current items (the only ones a release can hold)."""
    return {
        "stage": [(c, f"{c} · {n}") for c, n in Stage.objects.order_by("order", "code").values_list("code", "name")],
        "category": [(c, f"{c} · {n}") for c, n in TaskCategory.objects.order_by(
            "stage__order", "order", "code").values_list("code", "name")],
        "modality": [(v, v) for v in _current_item_values("modality")],
        "source_dataset": [(v, v) for v in _current_item_values("source_dataset")],
    }


def release_count_tables(*, release: Release) -> list[dict]:
    """release.counts as one table per dimension: rows (value, label, n, share of items)."""
    counts = release.counts or {}
    labels = {"stage": {t["stage"]: t.get("stage_name", "") for t in release.taxonomy or []},
              "category": {t["category"]: t.get("category_name", "") for t in release.taxonomy or []}}
    tables = []
    for key, title in COUNT_DIMENSIONS:
        values = counts.get(key) or {}
        total = sum(values.values()) or 1
        tables.append({"key": key, "title": title, "rows": [
            {"value": v, "label": labels.get(key, {}).get(v, ""), "n": n, "share": n / total}
            for v, n in values.items()]})
    return tables


# --- the changelog, read in the database: a page never loads the whole list -----------------------------
def change_summary_of(changes: list[dict]) -> dict[str, int]:
    """How many changelog entries of each kind (added, removed, changed), gold changes, and all of them."""
    kinds = Counter(c.get("kind", "") for c in changes)
    return {"added": kinds["added"], "removed": kinds["removed"], "changed": kinds["changed"],
            "gold_changed": sum(1 for c in changes if c.get("gold_changed")), "total": len(changes)}


def release_change_summary(*, release: Release) -> dict[str, int]:
    """`change_summary_of` the release's changelog, without reading it: the counts release_create
    recorded with it (its audit event; the changelog never changes afterwards), else counted in the
    database. A first release has no changelog."""
    if release.previous_id is None:
        return change_summary_of([])
    recorded = (AuditEvent.objects.filter(action="releases.release.create", object_type=Release._meta.label_lower,
                                          object_id=str(release.pk)).order_by("-seq")
                .values_list("after", flat=True).first()) or {}
    counts = recorded.get("changes")
    # the record describes this changelog when it was made against the same previous release
    if isinstance(counts, dict) and recorded.get("previous") == release.previous.version and all(
            isinstance(counts.get(k), int) for k in (*CHANGE_KINDS, "gold_changed")):
        return {**{k: counts[k] for k in (*CHANGE_KINDS, "gold_changed")},
                "total": sum(counts[k] for k in CHANGE_KINDS)}
    return _change_counts(release.pk)


class ChangeRows:
    """A release's changelog, or one kind of it, as a paginator reads it: its length (known from the
    summary) and one slice, read in the database."""

    def __init__(self, *, release_id: int, kind: str, count: int):
        self.release_id, self.kind, self._count = release_id, kind, count

    def count(self) -> int:
        return self._count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: slice) -> list[dict]:
        start, stop, step = index.indices(self._count)
        if step != 1:
            raise ValueError("a changelog page is a contiguous slice")
        return _change_slice(self.release_id, self.kind, start, stop - start) if stop > start else []


def release_change_rows(*, release: Release, summary: dict[str, int], kind: str = "") -> ChangeRows:
    """The changelog, optionally one kind only (`summary`: release_change_summary), for `page_of`."""
    count = summary.get(kind, 0) if kind else summary["total"]
    # a kind that is every entry needs no filter: its rows are read by position, like the whole list
    return ChangeRows(release_id=release.pk, kind="" if count == summary["total"] else kind, count=count)


def _table() -> str:
    return connection.ops.quote_name(Release._meta.db_table)


def _change_counts(release_id: int) -> dict[str, int]:
    """change_summary_of the stored changelog, counted by the database (one pass, nothing sent back)."""
    if connection.vendor == "postgresql":
        kind = "count(*) FILTER (WHERE e.value ->> 'kind' = %s)"
        gold = "count(*) FILTER (WHERE e.value -> 'gold_changed' = 'true'::jsonb)"
        source = "CROSS JOIN LATERAL jsonb_array_elements(r.changes) e"
    else:   # SQLite (the demo)
        kind = "sum(json_extract(e.value, '$.kind') = %s)"
        gold = "sum(json_type(e.value, '$.gold_changed') = 'true')"
        source = ", json_each(r.changes) e"
    sql = f"SELECT count(*), {kind}, {kind}, {kind}, {gold} FROM {_table()} r {source} WHERE r.id = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*CHANGE_KINDS, release_id])
        total, *counts = (n or 0 for n in cursor.fetchone())
    return {**dict(zip((*CHANGE_KINDS, "gold_changed"), counts, strict=True)), "total": total}


def _change_slice(release_id: int, kind: str, offset: int, limit: int) -> list[dict]:
    """Entries offset … offset+limit of the stored changelog (of one kind when `kind`), in its order."""
    postgres = connection.vendor == "postgresql"
    if postgres and not kind:
        # by position: jsonpath slices the array without expanding it
        sql, params = (f"SELECT jsonb_path_query_array(r.changes, %s::jsonpath) FROM {_table()} r WHERE r.id = %s",
                       [f"$[{int(offset)} to {int(offset) + int(limit) - 1}]", release_id])
    elif postgres:
        sql, params = (f"SELECT x.value FROM {_table()} r CROSS JOIN LATERAL jsonb_array_elements(r.changes) "
                       "WITH ORDINALITY AS x(value, n) WHERE r.id = %s AND x.value ->> 'kind' = %s "
                       "ORDER BY x.n LIMIT %s OFFSET %s", [release_id, kind, limit, offset])
    else:   # SQLite (the demo)
        where = " AND json_extract(e.value, '$.kind') = %s" if kind else ""
        sql, params = (f"SELECT e.value FROM {_table()} r, json_each(r.changes) e WHERE r.id = %s{where} "
                       "ORDER BY e.key LIMIT %s OFFSET %s", [release_id, *([kind] if kind else []), limit, offset])
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        values = [_json(v) for (v,) in cursor.fetchall()]
    return (values[0] if values else []) if postgres and not kind else values


def _json(value):
    return json.loads(value) if isinstance(value, (str, bytes)) else value
