"""How a rule hit reads on a page: the rule's title and description (from `RULES`, the one place they are
written), and its evidence as (label, text) rows for a small table — model names as the page shows them
("Model A"), chain steps ("step 3"), variant kinds and disagreement kinds by name, IoUs to two decimals.
Pure: no Django. `AdjudicationConfig.ready()` registers the titles as "rule" in `common.titles`."""
from __future__ import annotations

from collections.abc import Callable, Mapping

from annotation.variants.titles import kind_title
from common.formatting import answer_text, humanize_value, kv_rows, num
from common.titles import Title

#: what annotators disagreed on (labelstudio/agreement.py and labelstudio/services/pull.py name them)
CONFLICT_KINDS = {
    "box_unmatched": "a box only one annotator drew",
    "box_label": "the label of a box",
    "attribute": "an attribute of a box",
    "answer": "the answer",
    "gold_answer": "the gold answer",
}


def rule_titles(rules: Mapping) -> dict[str, Title]:
    """{rule name: Title(title, description)} of the registered rules (`adjudication.rules.RULES`)."""
    return {name: Title(rule.title, rule.description) for name, rule in rules.items()}


def _steps(value) -> str:
    return humanize_value(value) if value not in (None, [], ()) else "none"


def _grounding(entries) -> str:
    out = []
    for e in entries or []:
        if isinstance(e, Mapping):
            iou = e.get("iou")
            out.append(f"{humanize_value(e.get('item'))} ({'no box' if iou is None else 'IoU ' + num(iou, 2)})")
        else:
            out.append(humanize_value(e))
    return ", ".join(out) or "none"


def _model_consensus(ev: Mapping, kinds: Callable[[str], str]) -> list[tuple[str, str]]:
    rows = [("Their answer", answer_text(ev.get("answer"))), ("Gold", answer_text(ev.get("gold")))]
    if ev.get("agree") is not None:
        rows.append(("Models agreeing", f"{num(ev.get('agree'))} of {num(ev.get('answered'))} that answered"))
    return rows


def _wrong_evidence(ev: Mapping, kinds: Callable[[str], str]) -> list[tuple[str, str]]:
    rows = []
    for model, pattern in (ev.get("models") or {}).items():
        pattern = pattern or {}
        if pattern.get("weak_grounding"):
            rows.append((f"{model}: weak or missing box at", _grounding(pattern["weak_grounding"])))
        if pattern.get("wrong_earlier"):
            rows.append((f"{model}: wrong at earlier", _steps(pattern["wrong_earlier"])))
    return rows


def _contradiction(ev: Mapping, kinds: Callable[[str], str]) -> list[tuple[str, str]]:
    if "denial_item" in ev:
        return [("Gold denies the finding at", _steps(ev.get("denial_item"))),
                ("Gold describes it later at", _steps(ev.get("late_items")))]
    rows = []
    for model, steps in (ev.get("denials") or {}).items():
        rows.append((f"{model}: denies the finding at", _steps(steps)))
        rows.append((f"{model}: describes it later at", _steps((ev.get("asserted") or {}).get(model))))
    return rows


def _flip(ev: Mapping, kinds: Callable[[str], str]) -> list[tuple[str, str]]:
    rows = [(f"{model}: wrong under", ", ".join(kinds(k) for k in flipped) or "none")
            for model, flipped in (ev.get("flipped") or {}).items()]
    rows.append(("Right under every variant", _steps(ev.get("robust"))))
    return rows


def _annotators(ev: Mapping, kinds: Callable[[str], str]) -> list[tuple[str, str]]:
    return [("Label Studio task", f"#{ev.get('task')}" if ev.get("task") is not None else "—"),
            ("They disagree on", ", ".join(CONFLICT_KINDS.get(k, str(k).replace("_", " "))
                                          for k in ev.get("kinds") or []) or "—")]


EVIDENCE = {
    "model_consensus": _model_consensus,
    "right_answer_wrong_evidence": _wrong_evidence,
    "chain_contradiction": _contradiction,
    "adversarial_flip": _flip,
    "annotator_disagreement": _annotators,
}


def evidence_rows(rule: str, evidence, kinds: Callable[[str], str] = kind_title) -> list[tuple[str, str]]:
    """The evidence of one hit as (label, text) rows. A rule without its own layout gets the generic one
    (keys humanised, nested dicts flattened). `kinds` names variant kinds."""
    if not isinstance(evidence, Mapping) or not evidence:
        return []
    layout = EVIDENCE.get(rule)
    try:
        return layout(evidence, kinds) if layout else kv_rows(evidence)
    except (AttributeError, TypeError):    # evidence stored by an older rule version: the generic layout
        return kv_rows(evidence)
