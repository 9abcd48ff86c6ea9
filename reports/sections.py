"""The report's numeric sections, shaped from what a scored run already stores (pure: no database).

Every number here is read from `EvaluationRun.metrics` (workers/scoring/metrics.py defines each one and
its interval) or from the clean breakdowns of `reports.selectors.run_breakdowns`; nothing is re-estimated.
Model keys are "<run id>:<endpoint id>", so the same model evaluated in two runs stays two entries."""
from __future__ import annotations

from collections import defaultdict

from workers.results import KIND_LABELS
from workers.scoring.analyses import KIND_ORDER

from .criteria import HEADLINE
from .formatting import fmt_time

STAGES = ("1", "2", "3", "4")
DIMENSIONS = ("modality", "body_region", "category")
TOP_PATTERNS = 5


def kind_order(kinds) -> list[str]:
    return sorted(kinds, key=lambda k: (KIND_ORDER.index(k) if k in KIND_ORDER else len(KIND_ORDER), k))


def _keyed(d: dict | None, key: str):
    """Stage- and level-keyed entries: stored metrics have string keys, fresh ones int keys."""
    d = d or {}
    return d.get(key, d.get(int(key)) if key.isdigit() else None)


def _row_stat(row: dict) -> dict:
    """A cell_table row as a stat: the accuracy with its interval and counts."""
    return {"value": row.get("accuracy"), "lo": row.get("acc_lo"), "hi": row.get("acc_hi"), "k": row.get("correct"),
            "n": row.get("n"), "chance": row.get("chance")}


def performance(m: dict, *, image_necessary: dict | None) -> dict:
    """One model's performance entry (clean variants unless a field says otherwise)."""
    degradation = m.get("stage_degradation") or {}
    clean = ((degradation.get("by_kind") or {}).get("clean")) or {}
    out = {name: m.get(name) for name in HEADLINE}
    out.update({
        "n_predictions": m.get("n_predictions"),
        "circular_eval": m.get("circular_eval"),
        "grounding": m.get("grounding"),
        "answer_box": m.get("answer_box"),
        "by_stage": {s: _keyed(m.get("by_stage"), s) for s in STAGES if _keyed(m.get("by_stage"), s)},
        "stage_degradation": {
            "chains": degradation.get("chains") or 0,
            "clean": {s: _keyed(clean, s) for s in STAGES if _keyed(clean, s)},
            "drop": {s: _keyed(degradation.get("drop"), s) for s in STAGES if _keyed(degradation.get("drop"), s)},
        },
        "image_necessary": _row_stat(image_necessary) if image_necessary else None,
    })
    return out


def breakdown_rows(breakdowns: dict, endpoint_id: int, key: str) -> dict[str, list[dict]]:
    """This model's clean accuracy per modality, body region and category, sorted by group."""
    out = {}
    for dimension in DIMENSIONS:
        rows = [r for r in breakdowns.get(dimension, []) if r.get("endpoint") == endpoint_id]
        out[dimension] = [{"model": key, "group": str(r.get(dimension) or "(none)"), **_row_stat(r)}
                          for r in sorted(rows, key=lambda r: str(r.get(dimension)))]
    return out


def robustness(m: dict) -> dict:
    """One model's robustness entry: each variant kind (paired with its clean prediction), the hint and
    visual reliance, the false-premise control and the box dose-response."""
    stored = m.get("robustness") or {}
    kinds = {}
    for kind in kind_order(stored):
        r = stored[kind]
        kinds[kind] = {
            "label": KIND_LABELS.get(kind, kind), "effect": r.get("effect"), "n_pairs": r.get("n_pairs"),
            **{f: r.get(f) for f in ("clean_accuracy", "adversarial_accuracy", "drop", "flip_rate",
                                     "harmful_flip_rate", "helpful_flip_rate", "cue_adoption_rate",
                                     "cue_adoption_corrected", "cue_adoption_normalised")},
            "by_stage": {s: _keyed(r.get("by_stage"), s) for s in STAGES if _keyed(r.get("by_stage"), s)},
            "subkinds": r.get("subkinds") or {},
        }
    dose = m.get("dose_response") or {}
    return {"kinds": kinds, "hint_reliance": m.get("hint_reliance"), "visual_reliance": m.get("visual_reliance"),
            "premise": m.get("premise") or {},
            "dose_response": {lvl: dose[lvl] for lvl in ("clean", "0.7", "0.5", "0.3") if lvl in dose}}


def comparisons(metrics: dict, run_id: int, roles: dict[str, str]) -> list[dict]:
    """The run's paired comparisons between its models (same items, clean; McNemar on the discordant
    items, cluster-bootstrap interval of the difference), keyed by model."""
    out = []
    for c in metrics.get("comparisons") or []:
        a, b = f"{run_id}:{c.get('a')}", f"{run_id}:{c.get('b')}"
        boot = c.get("bootstrap") or {}
        out.append({"run": run_id, "a": a, "b": b, "n": c.get("n"), "acc_a": c.get("acc_a"), "acc_b": c.get("acc_b"),
                    "diff": {"value": boot.get("diff"), "lo": boot.get("lo"), "hi": boot.get("hi"), "n": boot.get("n")},
                    "bootstrap_p": boot.get("p_value"), "mcnemar": c.get("mcnemar"),
                    "involves_blind_baseline": "blind baseline" in (roles.get(a), roles.get(b))})
    return out


def failure_patterns(metrics: dict, endpoint_id: int, *, top: int = TOP_PATTERNS) -> dict:
    """Where this model fails most: its stored cells pooled over split and modality into (stage, category,
    variant kind), ranked by the number of wrong predictions; and what the wrong ones were (a wrong answer,
    an abstention, an unparseable answer, an error), over every kind."""
    groups: dict[tuple, dict] = defaultdict(lambda: {"n": 0, "wrong": 0, "abstained": 0, "unparseable": 0,
                                                      "errors": 0})
    for cell in metrics.get("cells") or []:
        if cell.get("endpoint") != endpoint_id:
            continue
        g = groups[(int(cell.get("stage") or 0), str(cell.get("category") or ""), str(cell.get("kind") or ""))]
        g["n"] += cell.get("n") or 0
        g["wrong"] += (cell.get("n") or 0) - (cell.get("correct") or 0)
        for key in ("abstained", "unparseable", "errors"):
            g[key] += cell.get(key) or 0
    ranked = sorted(((k, v) for k, v in groups.items() if v["wrong"]), key=lambda kv: (-kv[1]["wrong"], kv[0]))
    patterns = [{"stage": str(s), "category": c, "kind": k, **v, "wrong_rate": v["wrong"] / v["n"] if v["n"] else None}
                for (s, c, k), v in ranked[:top]]
    totals = {key: sum(v[key] for v in groups.values()) for key in ("n", "wrong", "abstained", "unparseable", "errors")}
    totals["wrong_answer"] = totals["wrong"] - totals["abstained"] - totals["unparseable"] - totals["errors"]
    return {"patterns": patterns, "outcomes": totals}


def limitations(doc: dict) -> list[dict]:
    """Facts the reader must weigh, generated from the document itself; each {"code", "text"}."""
    s = doc["sections"]
    facts = []

    def add(code: str, text: str) -> None:
        facts.append({"code": code, "text": text})

    for run in s["model_identity"]["runs"]:
        if not run["complete"]:
            add("run_incomplete", f"Run {run['id']} is {run['status']}: its numbers cover only what was predicted.")
        if run["split"] != "test":
            add("not_held_out", f"Run {run['id']} evaluates the {run['split']!r} split, not the held-out test "
                                "split alone.")
        if run["train_overlap"]:
            add("train_overlap", f"Run {run['id']} scores {', '.join(sorted(run['train_overlap']))} on items it "
                                 "was fitted on.")
        if not run["git_commit"]:
            add("no_code_version", f"Run {run['id']} did not record the platform's code version (git commit).")
    for m in doc["models"]:
        ident = s["model_identity"]["models"][m["key"]]
        perf = s["performance"]["models"][m["key"]]
        step = perf.get("step_accuracy") or {}
        if m["role"] != "model":
            add("not_a_clinical_model", f"{m['label']} is a {m['role']}, not a model under evaluation: "
                                        "read it as a reference point.")
        if ident["local_weights"] and not ident["weights_sha256"]:
            add("weights_unpinned", f"{m['label']}: no weights hash was recorded at run time; the weights "
                                    "are identified by name only.")
        if ident["prompt_template_hash_matches"] is False:
            add("template_mismatch", f"{m['label']}: the recorded prompt-template hash does not match the "
                                     "recorded template.")
        if (step.get("clusters") or 0) < 30:
            add("few_patients", f"{m['label']}: step accuracy rests on {step.get('clusters') or 0} patients; "
                                "intervals from so few clusters are wide and themselves uncertain.")
        if not perf["stage_degradation"]["chains"]:
            add("no_full_chains", f"{m['label']}: no chain has clean answers at all four stages; stage "
                                  "degradation is not measured.")
        for name in ("unparseable_rate", "error_rate"):
            value = (perf.get(name) or {}).get("value")
            if value and value > 0.05:
                add("parse_failures", f"{m['label']}: {name.replace('_', ' ')} is above 5%; those answers count "
                                      "as wrong.")
    data = s["data"]
    if data["release"] is None:
        add("no_release", "No release is named: the item set is the runs' own selection, not a frozen, "
                          "signed release.")
    elif data["release_coverage"]["evaluated_not_in_release"]:
        add("outside_release", f"{data['release_coverage']['evaluated_not_in_release']} evaluated item "
                               "versions are not the versions frozen in the release.")
    if data["shortcut_audit"] is None:
        add("no_shortcut_audit", "No shortcut audit has been run: whether the items can be passed without the "
                                 "image is not known.")
    necessary = data["evaluated"]["image_necessary"]
    if necessary["not_assessed"]:
        add("image_need_unknown", f"{necessary['not_assessed']} evaluated items were never judged by a shortcut "
                                  "audit (box and short-text items never are).")
    if s["reference_standard"]["open_cases"]:
        add("open_cases", f"{s['reference_standard']['open_cases']} adjudication cases on evaluated items are "
                          "still open: their gold answers may change.")
    for entry in s["acceptance"].get("history") or []:   # only stored versions carry the criteria history
        if entry.get("after_results"):
            what = "set" if entry["number"] == 1 else "changed"
            add(f"criteria_{what}_after_results",
                f"Acceptance criteria {what} after results existed: version {entry['number']}, recorded "
                f"{fmt_time(entry['recorded_at'])} ({'; '.join(entry.get('evidence') or []) or 'results existed'}).")
    if not s["logging"]["verification"]["ok"]:
        add("audit_chain_broken", "The audit trail did not verify: " + s["logging"]["verification"]["reason"])
    return facts
