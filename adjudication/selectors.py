"""Reads for the adjudication queue, the case page and the agreement dashboard. Every page runs a
fixed number of queries whatever the size of the benchmark (bench/ui_latency.py counts them).

Scope: curators, auditors and admins see every case. An adjudicator sees the cases they read
(assigned, claimed or already decided by them) and the undecided cases nobody reads yet that they
did not annotate; nothing else."""
from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404

from accounts.roles import Capability, user_can
from adjudication.models import ACTIVE_READING_STATUSES as ACTIVE, UNDECIDED_STATUSES, AdjudicationCase, CaseReading
from adjudication.raised_by import blind_value, cases_raised_by
from adjudication.rules import RULES
from adjudication.rules.titles import evidence_rows
from annotation.models import Finding, GroundingBox, QAItem, Stage, TaskCategory, Variant
from annotation.selectors import boxes_visible_to
from annotation.viewer import model_style
from common.formatting import answer_text
from common.titles import description_of, title_of
from labelstudio.agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal
from labelstudio.models import LabelStudioAnnotation
from workers.backends import baseline_backend_names
from workers.models import EvaluationRun, Prediction

CASE_FILTERS = ("status", "stage", "category", "modality", "rule", "mine")


def case_filters_from(params) -> dict:
    """The queue's filters from a query string (missing ones empty)."""
    return {k: params.get(k, "") for k in CASE_FILTERS}


def sees_all_cases(user) -> bool:
    return user_can(user, Capability.VIEW_ALL_IMAGES) or user_can(user, Capability.ASSIGN_CASES)


def _annotated_by(user) -> Q:
    """True where `user` annotated the case's image or item (assignment.py's rule). IN over
    subqueries: PostgreSQL hashes each subquery once instead of probing it for every case."""
    return (Q(image_id__in=LabelStudioAnnotation.objects.filter(author=user).values("task__image_id"))
            | Q(image_id__in=GroundingBox.objects.filter(author=user).exclude(
                source=Finding.Source.ADJUDICATION).values("image_id"))
            | Q(item_key__in=QAItem.objects.filter(created_by=user).values("item_key")))


def case_visible_to(user) -> QuerySet[AdjudicationCase]:
    """Cases the user may open: all for curators, auditors and admins; for an adjudicator every case
    on an image or item they did not annotate, plus the ones they read (so a case decided by a
    colleague while open still answers with a clear conflict, not a 404)."""
    qs = AdjudicationCase.objects.all()
    if sees_all_cases(user):
        return qs
    if not user_can(user, Capability.VIEW_QUEUE):
        return qs.none()
    return qs.filter(Q(pk__in=CaseReading.objects.filter(reader=user).values("case_id")) | ~_annotated_by(user))


def case_queue_for(user) -> QuerySet[AdjudicationCase]:
    """The cases listed in the user's queue: all for curators, auditors and admins; for an
    adjudicator the ones they read and the undecided ones nobody reads yet that they did not annotate.
    One flat WHERE (no per-case subquery), so the priority index serves the first page."""
    qs = AdjudicationCase.objects.all()
    if sees_all_cases(user):
        return qs
    if not user_can(user, Capability.VIEW_QUEUE):
        return qs.none()
    readings = CaseReading.objects.all()
    mine = readings.filter(reader=user).exclude(status=CaseReading.Status.WITHDRAWN).values("case_id")
    read = readings.filter(status__in=ACTIVE).values("case_id")
    tiebroken = readings.filter(status__in=ACTIVE, role=CaseReading.Role.TIEBREAK).values("case_id")
    was_reader = readings.filter(reader=user).values("case_id")
    available = (((Q(status=AdjudicationCase.Status.OPEN) & ~Q(pk__in=read))
                  | (Q(status=AdjudicationCase.Status.TIE) & ~Q(pk__in=tiebroken) & ~Q(pk__in=was_reader)))
                 & ~_annotated_by(user))
    return qs.filter(Q(pk__in=mine) | available)


def case_list(*, user, filters: dict | None = None) -> QuerySet[AdjudicationCase]:
    """The user's queue, highest priority first; by default the cases still to decide."""
    f = {k: v for k, v in (filters or {}).items() if v}
    qs = case_queue_for(user).select_related("item", "image", "stage", "category", "resolved_by")
    status = f.get("status", "todo")
    if status == "todo":
        qs = qs.filter(status__in=UNDECIDED_STATUSES)
    elif status != "all":
        qs = qs.filter(status=status)
    if f.get("stage"):       # codes resolved to ids first: no join in the count and page queries
        qs = qs.filter(stage_id__in=Stage.objects.filter(code=f["stage"]).values_list("pk", flat=True)[:1])
    if f.get("category"):
        qs = qs.filter(category_id__in=TaskCategory.objects.filter(code=f["category"]).values_list("pk", flat=True)[:1])
    if f.get("modality"):
        qs = qs.filter(modality=f["modality"])
    if f.get("rule"):
        qs = qs.filter(rules__contains=f",{f['rule']},")
    if f.get("mine") == "assigned":
        qs = qs.filter(readings__reader=user, readings__status=CaseReading.Status.ASSIGNED)
    elif f.get("mine") == "unassigned":
        qs = qs.exclude(readings__status__in=ACTIVE)
    return qs.order_by("-priority", "id")


QUEUE_COLUMNS = ("id", "priority", "item_id", "item__question", "image_id", "stage__code", "category__name",
                 "category__code", "modality", "rules", "hits", "run_ids", "status", "outcome", "double_read",
                 "updated_at")


def cases_in_order(ids, *, columns: tuple[str, ...] | None = QUEUE_COLUMNS) -> list[AdjudicationCase]:
    """The cases of one page, in the given order, with the columns the queue shows (None: every
    column). Pages are cut on ids first (an index walk), so a deep page never joins the rows it skips."""
    ids = list(ids)
    qs = AdjudicationCase.objects.select_related("item", "stage", "category")
    by_id = (qs.only(*columns) if columns else qs).in_bulk(ids)
    return [by_id[i] for i in ids if i in by_id]


def with_readers(cases) -> list[AdjudicationCase]:
    """Attach `active_readings` (reader names) to a page of cases: one query."""
    cases = list(cases)
    by_case = defaultdict(list)
    for r in (CaseReading.objects.filter(case__in=cases, status__in=ACTIVE).select_related("reader")
              .order_by("case_id", "assigned_at")):
        by_case[r.case_id].append(r)
    for c in cases:
        c.active_readings = by_case[c.pk]
    return cases


def case_filter_choices() -> dict:
    return {"status": [("todo", "to decide"), ("all", "all")] + list(AdjudicationCase.Status.choices),
            "stage": list(Stage.objects.order_by("order").values_list("code", "name")),
            "category": list(TaskCategory.objects.order_by("order").values_list("code", "name")),
            "modality": cache.get_or_set("adjudication:modalities", _modalities, 300),
            "rule": [(name, rule.title) for name, rule in RULES.items()],
            "mine": [("assigned", "assigned to me"), ("unassigned", "nobody reads yet")]}


def _modalities() -> list[str]:
    return sorted(m for m in AdjudicationCase.objects.order_by().values_list("modality", flat=True).distinct() if m)


def case_get(*, user, pk: int) -> AdjudicationCase:
    return get_object_or_404(case_visible_to(user).select_related(
        "item__category", "image", "stage", "category", "resolved_by", "result_item"), pk=pk)


def case_find(*, pk: int) -> AdjudicationCase | None:
    """A case by id, unscoped, or None (e.g. the case a reader just left, to skip it)."""
    return AdjudicationCase.objects.filter(pk=pk).first()


def reading_get(*, case: AdjudicationCase, pk) -> CaseReading:
    """One reading of the case (with its reader), or 404."""
    return get_object_or_404(CaseReading.objects.select_related("reader"), pk=pk, case=case)


def case_variant_get(*, case: AdjudicationCase, pk: int) -> Variant:
    """A variant of the case's item (any version), or 404."""
    return get_object_or_404(Variant, pk=pk, item__item_key=case.item_key)


def user_get(*, pk):
    """A user by id (a reader to assign), or 404."""
    return get_object_or_404(get_user_model(), pk=pk)


def latest_completed_run_id() -> int | None:
    run = EvaluationRun.objects.filter(status=EvaluationRun.Status.COMPLETED).order_by("-pk").first()
    return run.pk if run else None


def cases_waiting_for(*, user) -> dict[str, int]:
    """For the dashboard: the reader's pending readings, and the undecided cases nobody reads yet
    that they may take."""
    pending = CaseReading.objects.filter(reader=user, status=CaseReading.Status.ASSIGNED,
                                         case__status__in=UNDECIDED_STATUSES).count()
    unassigned = case_queue_for(user).filter(status=AdjudicationCase.Status.OPEN).exclude(
        pk__in=CaseReading.objects.filter(status__in=ACTIVE).values("case_id")).count()
    return {"assigned": pending, "unassigned": unassigned}


def next_case_for(*, user, after: AdjudicationCase | None = None) -> AdjudicationCase | None:
    """The next case this reader should open: their own pending readings first, then the
    highest-priority case nobody reads yet (never the current one)."""
    qs = case_queue_for(user).filter(status__in=UNDECIDED_STATUSES).exclude(
        readings__reader=user, readings__status=CaseReading.Status.SUBMITTED)
    if after is not None:
        qs = qs.exclude(pk=after.pk)
    assigned = qs.filter(readings__reader=user, readings__status=CaseReading.Status.ASSIGNED)
    return assigned.order_by("-priority", "id").first() or qs.order_by("-priority", "id").first()


# ---------------------------------------------------------------- the case page

@dataclass
class StepView:
    item: QAItem
    is_case_item: bool
    answers: list = field(default_factory=list)      # (model label, layer, prediction or None, answer text)


@dataclass
class CaseView:
    case: AdjudicationCase
    item: QAItem | None
    steps: list[StepView]
    models: list[tuple[str, str, str]]               # (layer id, label, colour)
    gold_boxes: list
    model_boxes: list                                # (layer, label, step, x0, y0, width, height)
    triggers: list                                   # (kind, variant, [(label, layer, prediction, text)])
    readings: list[CaseReading]
    my_reading: CaseReading | None
    options: list
    has_room: bool = False
    hits: list = field(default_factory=list)          # (title, priority, models, [(label, text)], description)
    raised_by: object = None                          # adjudication.raised_by.RaisedBy, blinded like `models`
    model_styles: dict = field(default_factory=dict)  # layer id -> common.palette.ModelStyle (annotation.viewer)


def _answer_text(prediction, options) -> str:
    if prediction is None:
        return "—"
    if prediction.outcome != "answered":
        return prediction.outcome
    value = prediction.parsed
    letters = [value] if isinstance(value, str) else value
    if isinstance(letters, list) and letters and all(isinstance(x, str) and len(x) == 1 for x in letters):
        texts = [str(options[ord(x.upper()) - 65]) for x in letters if 0 <= ord(x.upper()) - 65 < len(options or [])]
        if texts:
            return ", ".join(texts)
    return answer_text(value)       # a box as "box (x0, y0)–(x1, y1)", a list joined with commas


def case_view(*, case: AdjudicationCase, user) -> CaseView:
    """Everything the case page shows, in a fixed number of queries: the chain (current versions),
    each model's answer on the clean variant of every step and on every variant of the case item,
    gold and model boxes, and the readings this user may see."""
    item = None
    if case.item_key:
        item = (QAItem.objects.select_related("category", "stage", "chain")
                .prefetch_related("evidence_boxes").get(item_key=case.item_key, is_current=True))
    steps, predictions = [], []
    if item is not None:
        chain_items = list(QAItem.objects.filter(chain_id=item.chain_id, is_current=True)
                           .select_related("category", "stage").order_by("step"))
        keys = {i.item_key: i for i in chain_items}
        versions = dict(QAItem.objects.filter(item_key__in=list(keys)).values_list("pk", "item_key"))
        predictions = list(Prediction.objects.filter(item_id__in=list(versions), run_id__in=case.run_ids or [])
                           .exclude(endpoint__backend__in=baseline_backend_names())   # baselines are no models
                           .select_related("variant", "endpoint").order_by("-run_id", "endpoint_id", "pk"))
        steps = [StepView(item=i, is_case_item=i.item_key == item.item_key) for i in chain_items]
    endpoint_ids = sorted({p.endpoint_id for p in predictions})
    show_names = user_can(user, Capability.VIEW_RESULTS)
    names = {p.endpoint_id: p.endpoint.label for p in predictions}
    # named models keep their colour on every page; blinded letters take their position's colour
    styles = {f"m{n + 1}": model_style(endpoint_id=e, position=n, blinded=not show_names)
              for n, e in enumerate(endpoint_ids)}
    models = [(f"m{n + 1}", names[e] if show_names else f"Model {chr(65 + n)}", styles[f"m{n + 1}"].colour)
              for n, e in enumerate(endpoint_ids)]
    layer_of = {e: models[n] for n, e in enumerate(endpoint_ids)}
    label_of_name = {p.endpoint.name: layer_of[p.endpoint_id][1] for p in predictions}
    step_of = {pk: keys[key].step for pk, key in versions.items()} if item is not None else {}
    hits = _hit_views(case.hits, label_of_name, show_names, step_of)
    raised_by = cases_raised_by([case], user=user, labels={case.pk: label_of_name})[case.pk]
    # first (newest run) prediction per model, item_key and variant kind
    first: dict = {}
    for p in predictions:
        variant = 0 if p.variant.kind == "clean" else p.variant_id   # the clean answer of any version counts once
        first.setdefault((p.endpoint_id, versions[p.item_id], p.variant.kind, variant), p)
    clean = {(e, k): p for (e, k, kind, _), p in first.items() if kind == "clean"}
    model_boxes = []
    for step in steps:
        for e in endpoint_ids:
            p = clean.get((e, step.item.item_key))
            layer, label, _ = layer_of[e]
            step.answers.append((label, layer, p, _answer_text(p, p.variant.options if p else step.item.options)))
            if p is not None and step.item.category.answer_type == "box" and p.outcome == "answered" and isinstance(
                    p.parsed, list) and len(p.parsed) == 4:
                x0, y0, x1, y1 = (float(v) for v in p.parsed)
                model_boxes.append((layer, label, step.item.step, x0, y0, max(x1 - x0, 0), max(y1 - y0, 0)))
    triggers = []
    if item is not None:
        by_variant = defaultdict(list)
        for (e, key, kind, _), p in first.items():
            if key == item.item_key and kind != "clean":
                by_variant[p.variant].append((e, p))
        flipped = set()
        for hit in case.hits:
            for kinds in (hit.get("evidence") or {}).get("flipped", {}).values():
                flipped.update(kinds)
        for variant in sorted(by_variant, key=lambda v: (v.kind not in flipped, v.kind, v.pk)):
            if flipped and variant.kind not in flipped:
                continue
            rows = [(layer_of[e][1], layer_of[e][0], p, _answer_text(p, variant.options))
                    for e, p in sorted(by_variant[variant], key=lambda t: t[0])]
            triggers.append((variant.kind, variant, rows))
    gold_boxes = list(boxes_visible_to(user, GroundingBox.objects.filter(image_id=case.image_id, status="active"))
                      .select_related("finding").order_by("pk"))
    evidence = {b.pk for b in item.evidence_boxes.all()} if item is not None else set()
    for b in gold_boxes:
        b.is_evidence = b.pk in evidence
    all_readings = list(case.readings.select_related("reader"))
    readings = [r for r in all_readings if r.status != CaseReading.Status.WITHDRAWN]
    mine = next((r for r in readings if r.reader_id == user.pk), None)
    room = case.role_open_to(user.pk, all_readings) is not None
    if case.status != AdjudicationCase.Status.RESOLVED and not sees_all_cases(user):
        readings = [r for r in readings if r.reader_id == user.pk]       # independent readings stay blind
    return CaseView(case=case, item=item, steps=steps, models=models, gold_boxes=gold_boxes, model_boxes=model_boxes,
                    triggers=triggers, readings=readings, my_reading=mine, options=list(item.options) if item else [],
                    has_room=room, hits=hits, raised_by=raised_by, model_styles=styles)


ITEM_ID_KEYS = frozenset({"item", "item_id", "wrong_earlier", "denial_item", "late_items", "denials", "asserted"})


def _as_steps(value, step_of: dict[int, int], under_item_key: bool = False):
    """Item ids in rule evidence shown as the chain steps a reader sees ("step 3")."""
    if isinstance(value, dict):
        return {k: _as_steps(v, step_of, under_item_key or k in ITEM_ID_KEYS) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_steps(v, step_of, under_item_key) for v in value]
    if under_item_key and isinstance(value, int) and not isinstance(value, bool) and value in step_of:
        return f"step {step_of[value]}"
    return value


def _hit_views(hits, label_of_name: dict[str, str], show_names: bool, step_of: dict[int, int]) -> list:
    names = {} if show_names else dict(label_of_name)
    if not show_names:   # a model with no prediction loaded here still must not be named
        for hit in hits:
            for m in hit.get("models", []):
                names.setdefault(m, "another model")
    out = []
    for hit in hits:
        evidence = _as_steps(blind_value(hit.get("evidence") or {}, names), step_of)
        out.append((title_of("rule", hit.get("rule")), hit.get("priority"),
                    [names.get(m, m) for m in hit.get("models", [])],
                    evidence_rows(hit.get("rule"), evidence), description_of("rule", hit.get("rule"))))
    return out


# ---------------------------------------------------------------- agreement dashboard

@dataclass
class AgreementRow:
    category: str
    name: str
    cases: int = 0
    resolved: int = 0
    items: int = 0
    outcomes: dict = field(default_factory=dict)
    double_read: int = 0
    cohen: float | None = None
    fleiss: float | None = None
    alpha: float | None = None
    median_time_s: float | None = None

    @property
    def adjudication_rate(self) -> float | None:
        return self.resolved / self.cases if self.cases else None

    @property
    def flag_rate(self) -> float | None:
        return self.cases / self.items if self.items else None


def agreement_summary() -> list[AgreementRow]:
    """Per category (and overall, last): cases, how many are decided, their outcomes, and the
    agreement between independent readers on double-read cases: Cohen's kappa (first vs second
    reader), Fleiss' kappa (the two readings of each case), Krippendorff's alpha (every reading,
    third readers included). A reading's category is its verdict, plus the new answer for a
    correction."""
    names = dict(TaskCategory.objects.values_list("code", "name"))
    rows: dict[str, AgreementRow] = {}

    def row(code):
        code = code or "(image-level)"
        if code not in rows:
            rows[code] = AgreementRow(category=code, name=names.get(code, code))
        return rows[code]

    for code, status, outcome, n in (AdjudicationCase.objects.values_list("category__code", "status", "outcome")
                                     .annotate(n=Count("id")).order_by()):
        r = row(code)
        r.cases += n
        if status == AdjudicationCase.Status.RESOLVED:
            r.resolved += n
            r.outcomes[outcome] = r.outcomes.get(outcome, 0) + n
    for code, n in cache.get_or_set("adjudication:items-per-category", _items_per_category, 300).items():
        if code in rows:
            rows[code].items = n
    readings = defaultdict(list)
    times = defaultdict(list)
    submitted = CaseReading.objects.filter(status=CaseReading.Status.SUBMITTED)
    for code, spent in submitted.filter(time_spent_s__isnull=False).order_by().values_list(
            "case__category__code", "time_spent_s"):
        times[code or "(image-level)"].append(spent)
    for case_id, code, role, verdict, answer in (
            submitted.filter(case__double_read=True)
            .values_list("case_id", "case__category__code", "role", "verdict", "answer")
            .order_by("case_id", "submitted_at", "pk")):
        readings[(code or "(image-level)", case_id)].append((role, json.dumps([verdict, answer], sort_keys=True)))
    per_category = defaultdict(list)
    for (code, _), rs in readings.items():
        per_category[code].append(rs)
    overall = AgreementRow(category="all", name="All categories")
    all_units = []
    for code, r in rows.items():
        units = per_category.get(code, [])
        _agreement(r, units)
        r.median_time_s = statistics.median(times[code]) if times[code] else None
        overall.cases += r.cases
        overall.resolved += r.resolved
        for k, v in r.outcomes.items():
            overall.outcomes[k] = overall.outcomes.get(k, 0) + v
        all_units.extend(units)
    overall.items = sum(cache.get_or_set("adjudication:items-per-category", _items_per_category, 300).values())
    _agreement(overall, all_units)
    every_time = [t for ts in times.values() for t in ts]
    overall.median_time_s = statistics.median(every_time) if every_time else None
    return sorted(rows.values(), key=lambda r: (-r.cases, r.category)) + [overall]


def _items_per_category() -> dict[str, int]:
    """Current items per category (cached five minutes: a full pass over the items table)."""
    return dict(QAItem.objects.filter(is_current=True).order_by().values_list("category__code")
                .annotate(n=Count("id")).values_list("category__code", "n"))


def _agreement(row: AgreementRow, units) -> None:
    pairs = [(dict(u).get("primary"), dict(u).get("second")) for u in units]
    pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
    row.double_read = len(units)
    if pairs:
        row.cohen = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])
        row.fleiss = fleiss_kappa([[a, b] for a, b in pairs])
    values = [[v for _, v in u] for u in units if len(u) >= 2]
    row.alpha = krippendorff_alpha_nominal(values) if values else None
