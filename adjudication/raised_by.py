"""Selectors: which evaluation runs and which models raised each case ("Raised by" on the queue, the
case page and the API). Reads only, two queries for a page of cases.

A case's runs are the reference runs whose answers its hits read (`AdjudicationCase.run_ids`, kept by
adjudication.services.cases); its models are the models its hits name (never a baseline).

Blinding: users who may see results (curators, auditors, admins: `view_results`) see run ids, run names
and model names; readers (adjudicators) see neither: the runs as "Reference run 1", "Reference run 2"
(numbered within the case, no id: run ids and names lead to the results they are blind to) and the models
as "Model A", "Model B", ... lettered like the case page: the non-baseline models of the case's runs, by
id. `blind_value` applies the same labels to the rule evidence the API returns (`hits`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from accounts.roles import Capability, user_can
from adjudication.models import AdjudicationCase
from adjudication.rules import RULES
from workers.backends import is_baseline_backend
from workers.models import EvaluationRun

HIDDEN_MODEL = "another model"


@dataclass(frozen=True)
class RaisedRun:
    id: int | None          # None for readers
    label: str              # "Run 12: Demo evaluation" (names shown) or "Reference run 1"
    name: str | None        # None when names are hidden
    reference: bool         # still a reference run (a withdrawn case's run may not be)


@dataclass(frozen=True)
class RaisedBy:
    runs: list[RaisedRun] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    annotators: bool = False   # Label Studio annotators disagree (a hit that no run raised)
    blinded: bool = False      # the user is a reader: `labels` stand in for model names
    labels: dict = field(default_factory=dict)   # model name -> the label this reader sees

    def blind(self, value):
        """`value` (rule evidence, hits) with every model name this reader may not see replaced."""
        return blind_value(value, self.labels) if self.blinded else value

    def as_dict(self) -> dict:
        return {"runs": [{"id": r.id, "label": r.label, "name": r.name, "reference": r.reference}
                         for r in self.runs], "models": list(self.models), "annotators": self.annotators}


def blind_value(value, names: Mapping[str, str]):
    """Model names in rule evidence replaced by the reader's labels (dict keys and string values,
    recursively)."""
    if isinstance(value, dict):
        return {names.get(k, k) if isinstance(k, str) else k: blind_value(v, names) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [blind_value(v, names) for v in value]
    return names.get(value, value) if isinstance(value, str) else value


def blind_model_labels(endpoint_ids: Iterable[int]) -> dict[int, str]:
    """endpoint id -> "Model A", "Model B", ... in id order (the case page's blinded labels)."""
    return {e: f"Model {chr(65 + n)}" if n < 26 else f"Model {n + 1}" for n, e in enumerate(sorted(endpoint_ids))}


def cases_raised_by(cases: Iterable[AdjudicationCase], *, user,
                    labels: Mapping[int, Mapping[str, str]] | None = None) -> dict[int, RaisedBy]:
    """case id -> RaisedBy, blinded for `user` (module docstring). `labels`: case id -> {model name:
    label} the caller already shows (the case page), used first."""
    cases = list(cases)
    show = user_can(user, Capability.VIEW_RESULTS)
    run_ids = {r for c in cases for r in (c.run_ids or ())}
    runs = EvaluationRun.objects.only("pk", "name", "is_reference").in_bulk(run_ids) if run_ids else {}
    endpoints: dict[int, list[tuple[int, str, str]]] = {}
    if run_ids:
        through = EvaluationRun.endpoints.through.objects.filter(evaluationrun_id__in=run_ids)
        for run_id, pk, name, display, backend in through.values_list(
                "evaluationrun_id", "modelendpoint_id", "modelendpoint__name", "modelendpoint__display_name",
                "modelendpoint__backend"):
            if not is_baseline_backend(backend):
                endpoints.setdefault(run_id, []).append((pk, name, display or name))
    out = {}
    for case in cases:
        mine = {pk: (name, label) for r in (case.run_ids or ()) for pk, name, label in endpoints.get(r, ())}
        letters = blind_model_labels(mine)
        known = {name: (label if show else letters[pk]) for pk, (name, label) in mine.items()}
        known.update((labels or {}).get(case.pk, {}))
        models = []
        for hit in case.hits or ():
            for name in hit.get("models", ()):
                label = known.get(name, name if show else HIDDEN_MODEL)
                known.setdefault(name, label)
                if label not in models:
                    models.append(label)
        present = sorted(r for r in (case.run_ids or ()) if r in runs)
        shown = [RaisedRun(id=r, label=f"Run {r}: {runs[r].name}", name=runs[r].name, reference=runs[r].is_reference)
                 if show else RaisedRun(id=None, label=f"Reference run {n}", name=None, reference=runs[r].is_reference)
                 for n, r in enumerate(present, start=1)]
        annotators = any(getattr(RULES.get(h.get("rule")), "source", "") == "conflicts" for h in case.hits or ())
        out[case.pk] = RaisedBy(runs=shown, models=sorted(models), annotators=annotators, blinded=not show,
                                labels={} if show else known)
    return out


def with_raised_by(cases, *, user) -> list[AdjudicationCase]:
    """Attach `raised_by` (RaisedBy) to each case of a page: two queries."""
    cases = list(cases)
    found = cases_raised_by(cases, user=user)
    for case in cases:
        case.raised_by = found[case.pk]
    return cases
