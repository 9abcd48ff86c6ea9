"""Comparing models of one run (finetune/comparison.py), on a run whose answers are written by hand: every
number checked against a count made here from the items' stages, the paired intervals' sign and
containment, the per-recipe means over seeds, the page and API (roles, bad parameters) and the report's
fine-tuning section."""
from __future__ import annotations

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from finetune.charts import pp
from finetune.comparison import model_comparison

pytestmark = pytest.mark.django_db

# name: (display name, lineage (recipe, seed) or None, clean answer right at stage s?, adopts the misleading
# hint at stage s?). The base is wrong at S4 and always follows a misleading hint; the stepwise seeds are always
# right on clean items, seed 0 never follows a hint and seed 1 follows it at S1; answer-only is wrong at S3.
MODELS = {
    "tiny-base": ("Tiny base", None, lambda s: s != 4, lambda s: True),
    "tiny-ft-step-s0": ("Tiny + stepwise (seed 0)", ("stepwise", 0), lambda s: True, lambda s: False),
    "tiny-ft-step-s1": ("Tiny + stepwise (seed 1)", ("stepwise", 1), lambda s: True, lambda s: s == 1),
    "tiny-ft-answer-s0": ("Tiny + answer only (seed 0)", ("answer_only", 0), lambda s: s != 3, lambda s: True),
}


def _answer(variant, right: bool, adopts: bool):
    """(parsed, correct, cue_adopted, iou, box) of an answer to this variant."""
    expected = variant.expected_answer or {}
    if variant.item.category.answer_type == "box":
        gold = expected["value"]
        return (gold, True, None, 1.0, gold) if right else ([0, 0, 8, 8], False, None, 0.0, [0, 0, 8, 8])
    gold = expected["letter"]
    if variant.kind == "misleading_hint":
        return (variant.params["hinted_letter"], False, True, None, None) if adopts else (gold, True, False, None, None)
    if right:
        return gold, True, None, None, None
    letters = [chr(65 + i) for i in range(len(variant.options))]
    wrong = next(x for x in letters if x not in (gold if isinstance(gold, list) else [gold]))
    return ([wrong] if isinstance(gold, list) else wrong), False, None, None, None


@pytest.fixture
def paired_run(eval_content, make_endpoint):
    """A run of `models` over clean and misleading-hint variants of 8 phantoms (4 patients), answered by hand
    (MODELS), with the fine-tuning jobs that made the fine-tuned models; scored unless `score=False`."""

    def _make(models=tuple(MODELS), score: bool = True, job_run: bool = False):
        from finetune.models import FineTuneJob
        from workers.models import EvaluationRun, Prediction, RunBatch
        from workers.services.runs import run_create
        from workers.services.scoring import run_score

        eval_content(images=8, kinds=["clean", "misleading_hint"])
        base = make_endpoint("tiny-base", "transformers", parameters={"path": "/models/tiny"}, display_name="Tiny base")
        endpoints, jobs = {"tiny-base": base}, []
        for name in models[1:]:
            label, (recipe, seed), _, _ = MODELS[name]
            job = FineTuneJob.objects.create(name=f"{recipe} seed {seed}", base_endpoint=base, recipe=recipe, steps=40,
                                             seed=seed, status=FineTuneJob.Status.COMPLETED)
            endpoints[name] = make_endpoint(name, "transformers", parameters={"path": "/models/tiny", "adapter": "a"},
                                            display_name=label, lineage={"job": job.pk, "base": "tiny-base",
                                                                         "recipe": recipe, "seed": seed, "steps": 40,
                                                                         "release": None})
            FineTuneJob.objects.filter(pk=job.pk).update(result_endpoint=endpoints[name])
            jobs.append(job)
        run = run_create(name="base vs fine-tuned", endpoints=list(endpoints.values()), actor=None, split="all",
                         start=False)
        if job_run:
            FineTuneJob.objects.filter(pk=jobs[0].pk).update(evaluation_run=run)
        from annotation.models import Variant

        ids = {v for batch in RunBatch.objects.filter(run=run) for v in batch.variant_ids}
        variants = list(Variant.objects.filter(pk__in=ids).select_related("item__stage", "item__category"))
        rows = []
        for name, endpoint in endpoints.items():
            _, _, right, adopts = MODELS[name]
            for v in variants:
                stage = v.item.stage.order
                parsed, correct, cue, iou, box = _answer(v, right(stage), adopts(stage))
                rows.append(Prediction(run=run, endpoint=endpoint, variant=v, item=v.item, raw_output=str(parsed),
                                       outcome="answered", parsed=parsed, correct=correct, iou=iou, box=box,
                                       cue_adopted=cue, parse_method="box_pixel" if box else "letter_only"))
        Prediction.objects.bulk_create(rows)
        EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.COMPLETED)
        run = EvaluationRun.objects.get(pk=run.pk)
        if score:
            run_score(run=run, actor=None)
        return EvaluationRun.objects.get(pk=run.pk)

    return _make


def _facts(run):
    """What the hand computation needs: per clean item its (chain, stage); per misleading variant its stage."""
    from workers.models import Prediction

    rows = Prediction.objects.filter(run=run, endpoint__name="tiny-base").values_list(
        "variant__kind", "item_id", "item__chain_id", "item__stage__order")
    clean = {item: (chain, stage) for kind, item, chain, stage in rows if kind == "clean"}
    hints = [stage for kind, _, _, stage in rows if kind == "misleading_hint"]
    return clean, hints


def _by_name(comparison, name):
    return next(m for m in comparison["models"] if m["name"] == name)


def _diff(comparison, name, key):
    return next(p for p in comparison["pairwise"] if p["model"] == name)["differences"][key]


def _contains(d):
    return d["lo"] <= d["value"] <= d["hi"]


def test_numbers_and_paired_differences_match_a_hand_count(paired_run):
    run = paired_run(models=("tiny-base", "tiny-ft-step-s0"))
    clean, hints = _facts(run)
    stages = np.array([s for _, s in clean.values()])
    chains: dict[int, list[int]] = {}
    for chain, stage in clean.values():
        chains.setdefault(chain, []).append(stage)
    c = model_comparison(run=run)
    assert [m["name"] for m in c["models"]] == ["tiny-base", "tiny-ft-step-s0"]   # the lineage names the base
    base, tuned = _by_name(c, "tiny-base"), _by_name(c, "tiny-ft-step-s0")
    assert base["is_base"] and base["lineage"] is None and base["source"] == "stored"
    assert (tuned["lineage"]["recipe"], tuned["lineage"]["seed"], tuned["lineage"]["steps"]) == ("stepwise", 0, 40)

    # clean accuracy: the base is wrong exactly at S4
    assert base["values"]["step_accuracy"]["value"] == pytest.approx(np.mean(stages != 4))
    assert base["values"]["step_accuracy"]["k"] == int(np.sum(stages != 4))
    assert tuned["values"]["step_accuracy"]["value"] == 1
    # chain accuracy: a chain is right when it has no S4 step
    assert base["values"]["chain_accuracy"]["value"] == pytest.approx(
        np.mean([4 not in s for s in chains.values()]))
    # stage degradation on the full chains: the base falls from 100% at S1 to 0% at S4
    assert base["values"]["stage.S1.accuracy"]["value"] == 1 and base["values"]["stage.S4.accuracy"]["value"] == 0
    assert base["values"]["stage.S4.drop"]["value"] == 1 and tuned["values"]["stage.S4.drop"]["value"] == 0
    # robustness: the base follows every misleading hint, the fine-tuned model none
    hint_right = np.mean([s != 4 for s in hints])
    assert base["values"]["robustness.misleading_hint.drop"]["value"] == pytest.approx(hint_right)
    assert base["values"]["robustness.misleading_hint.adversarial_accuracy"]["value"] == 0
    assert base["values"]["robustness.misleading_hint.cue_adoption_rate"]["value"] == 1
    assert tuned["values"]["robustness.misleading_hint.cue_adoption_rate"]["value"] == 0

    # paired differences, fine-tuned − base: sign, size and an interval that holds the value
    d = _diff(c, "tiny-ft-step-s0", "step_accuracy")
    assert d["value"] == pytest.approx(np.mean(stages == 4)) and d["value"] > 0 and _contains(d) and d["lo"] >= 0
    assert d["source"] == "stored comparison (items)" and d["mcnemar_p"] is not None
    d = _diff(c, "tiny-ft-step-s0", "robustness.misleading_hint.drop")
    assert d["value"] == pytest.approx(-hint_right) and d["value"] < 0 and _contains(d) and d["hi"] <= 0
    d = _diff(c, "tiny-ft-step-s0", "robustness.misleading_hint.cue_adoption_rate")
    assert (d["value"], d["lo"], d["hi"]) == (-1, -1, -1)        # every resample: adopted always vs never
    d = _diff(c, "tiny-ft-step-s0", "stage.S4.accuracy")
    assert (d["value"], d["lo"], d["hi"]) == (1, 1, 1)
    assert _diff(c, "tiny-ft-step-s0", "stage.S4.drop")["value"] == -1
    assert c["run"]["clusters"] == 4 and c["run"]["seed"] == run.pk


def test_computed_numbers_are_the_stored_ones_and_the_stored_comparison(paired_run):
    """Recomputed from the predictions with the paired resampling, every model's numbers and intervals are
    exactly the stored ones, and the computed clean difference is the stored paired comparison."""
    run = paired_run(models=("tiny-base", "tiny-ft-step-s0", "tiny-ft-answer-s0"))
    stored = model_comparison(run=run)
    scored_metrics = run.metrics
    run.metrics, run.scored_at = None, None                         # as if never scored: everything computed
    computed = model_comparison(run=run)
    assert {m["source"] for m in computed["models"]} == {"computed"}
    for s, c in zip(stored["models"], computed["models"]):
        for key, value in s["values"].items():
            assert c["values"][key] == pytest.approx(value), key
    for s, c in zip(stored["pairwise"], computed["pairwise"]):
        clean_s, clean_c = s["differences"]["step_accuracy"], c["differences"]["step_accuracy"]
        assert clean_s["source"] == "stored comparison (items)" and "source" not in clean_c
        for field in ("value", "lo", "hi"):
            assert clean_c[field] == pytest.approx(clean_s[field], abs=1e-6)
    answer = _diff(computed, "tiny-ft-answer-s0", "stage.S3.accuracy")   # answer-only is wrong at S3 only
    assert answer["value"] == -1 and answer["hi"] == -1
    run.metrics = scored_metrics


def test_stored_numbers_that_no_longer_describe_the_predictions_are_recomputed(paired_run):
    from workers.models import Prediction

    run = paired_run(models=("tiny-base", "tiny-ft-step-s0"))
    Prediction.objects.filter(run=run, endpoint__name="tiny-ft-step-s0", variant__kind="clean").order_by("pk") \
        .first().delete()                                           # arrived (or went) after scoring
    c = model_comparison(run=run)
    assert [m["source"] for m in c["models"]] == ["stored", "computed"]
    tuned = _by_name(c, "tiny-ft-step-s0")
    stored = run.metrics["models"][str(tuned["endpoint"])]
    assert tuned["values"]["step_accuracy"]["n"] == stored["step_accuracy"]["n"] - 1
    assert "source" not in _diff(c, "tiny-ft-step-s0", "step_accuracy")     # not the stale stored comparison


def test_the_fine_tuning_jobs_base_is_first_whatever_the_order_asked(paired_run):
    run = paired_run(models=("tiny-base", "tiny-ft-step-s0"), job_run=True)
    c = model_comparison(run=run, endpoints=["tiny-ft-step-s0", "tiny-base"])
    assert c["base"] == "tiny-base" and [m["name"] for m in c["models"]] == ["tiny-base", "tiny-ft-step-s0"]
    assert [j["recipe"] for j in c["jobs"]] == ["stepwise"]


def test_fine_tuned_models_are_aggregated_per_recipe_over_seeds(paired_run):
    run = paired_run()
    c = model_comparison(run=run)
    _, hints = _facts(run)
    s1_share = np.mean([s == 1 for s in hints])
    assert c["base"] == "tiny-base" and len(c["models"]) == 4
    recipes = {r["recipe"]: r for r in c["recipes"]}
    assert list(recipes) == ["stepwise", "answer_only"]
    step = recipes["stepwise"]
    assert step["models"] == ["tiny-ft-step-s0", "tiny-ft-step-s1"] and step["seeds"] == [0, 1]
    adoption = step["values"]["robustness.misleading_hint.cue_adoption_rate"]
    assert [x["value"] for x in adoption["per_seed"]] == pytest.approx([0, s1_share])
    assert adoption["mean"] == pytest.approx(s1_share / 2) and adoption["min"] == 0
    d = step["differences"]["robustness.misleading_hint.cue_adoption_rate"]   # mean of (0 − 1, s1_share − 1)
    assert d["value"] == pytest.approx((s1_share - 2) / 2) and _contains(d) and d["hi"] < 0
    per_model = [_diff(c, n, "robustness.misleading_hint.cue_adoption_rate")["value"] for n in step["models"]]
    assert d["value"] == pytest.approx(np.mean(per_model))
    assert recipes["answer_only"]["values"]["step_accuracy"]["per_seed"][0]["model"] == "tiny-ft-answer-s0"


def test_models_not_in_the_run_or_fewer_than_two_are_refused(paired_run):
    run = paired_run(models=("tiny-base", "tiny-ft-step-s0"))
    with pytest.raises(ValidationError, match="'gpt-9' is not a model of run"):
        model_comparison(run=run, endpoints=["tiny-base", "gpt-9"])
    with pytest.raises(ValidationError, match="two or more models"):
        model_comparison(run=run, endpoints=["tiny-base"])


# --- the page and the API ------------------------------------------------------------------------------------------
def _get(user, name, **params):
    client = Client()
    client.force_login(user)
    return client.get(reverse(f"finetune:{name}"), params)


@pytest.mark.parametrize("role", [Role.CURATOR, Role.AUDITOR])
def test_curators_and_auditors_see_the_page_and_the_api(paired_run, users, role):
    run = paired_run(models=("tiny-base", "tiny-ft-step-s0"))
    page = _get(users[role], "compare", run=run.pk)
    html = page.content.decode()
    assert page.status_code == 200
    for piece in ('id="compare-models"', 'id="compare-headline"', 'id="compare-stages"', 'id="compare-robustness"',
                  'id="compare-adoption"', 'id="figure-stages"', 'id="figure-robustness"', "Tiny + stepwise (seed 0)",
                  reverse("workers:run-detail", args=[run.pk])):
        assert piece in html, piece
    drop = _diff(model_comparison(run=run), "tiny-ft-step-s0", "robustness.misleading_hint.drop")
    value, interval = pp(drop)                                      # written "−85.0 pp [−100.0, −66.7]"
    assert value.startswith("\u2212") and value.endswith(" pp") and interval.startswith("[\u2212")
    assert f'Δ {value} <span class="ci">{interval}</span>' in html
    api = _get(users[role], "api-compare", run=run.pk, models="tiny-ft-step-s0,tiny-base")
    assert api.status_code == 200 and api.json()["base"] == "tiny-base"
    assert api.json()["pairwise"][0]["differences"]["step_accuracy"]["value"] > 0


def test_an_annotator_is_refused(paired_run, users):
    run = paired_run(models=("tiny-base", "tiny-ft-step-s0"))
    assert _get(users[Role.ANNOTATOR], "compare", run=run.pk).status_code == 403
    assert _get(users[Role.ANNOTATOR], "api-compare", run=run.pk).status_code == 403


def test_bad_parameters_answer_400_or_404_with_a_readable_message(paired_run, users):
    run = paired_run(models=("tiny-base", "tiny-ft-step-s0"))
    curator = users[Role.CURATOR]
    cases = [({}, 400, "Choose an evaluation run"), ({"run": "abc"}, 400, "a run id"),
             ({"run": "99999999999999"}, 400, "so large"), ({"run": "999999"}, 404, "no evaluation run 999999"),
             ({"run": run.pk, "models": "tiny-base,nope"}, 400, "&#x27;nope&#x27; is not a model of run"),
             ({"run": run.pk, "models": "tiny-base"}, 400, "two or more models")]
    for params, status, message in cases:
        page = _get(curator, "compare", **params)
        assert page.status_code == status and message in page.content.decode(), params
        assert 'id="compare-form"' in page.content.decode()              # the form stays usable
    for params, status, code in [({}, 400, "invalid"), ({"run": "abc"}, 400, "invalid"),
                                 ({"run": "999999"}, 404, "not_found"),
                                 ({"run": run.pk, "models": "nope,tiny-base"}, 400, "invalid")]:
        answer = _get(curator, "api-compare", **params)
        assert answer.status_code == status and answer.json()["code"] == code and answer.json()["detail"], params


def test_the_api_schema_documents_the_comparison(users):
    client = Client()
    client.force_login(users[Role.CURATOR])
    schema = client.get(reverse("api-schema"), {"format": "json"}).json()
    get = schema["paths"]["/api/finetune/compare/"]["get"]
    assert {p["name"] for p in get["parameters"]} >= {"run", "models"}


# --- the governance report --------------------------------------------------------------------------------------------
def test_the_report_gets_a_fine_tuning_section_with_the_comparison(paired_run):
    from reports.document import SECTIONS, report_document
    from reports.render import render_html

    run = paired_run()
    doc = report_document(runs=[run])
    keys = [e["key"] for e in doc["section_order"]]
    assert keys.index("finetuning") == keys.index("robustness") + 1 and len(keys) == len(SECTIONS) + 1
    section = doc["sections"]["finetuning"]
    (entry,) = section["runs"]
    c = model_comparison(run=run)
    assert entry["run"] == run.pk and entry["base"] == f"{run.pk}:{_by_name(c, 'tiny-base')['endpoint']}"
    assert entry["comparison"]["pairwise"][0]["differences"]["step_accuracy"]["value"] == \
        c["pairwise"][0]["differences"]["step_accuracy"]["value"]
    assert [r["recipe"] for r in entry["comparison"]["recipes"]] == ["stepwise", "answer_only"]
    html = render_html(doc)
    assert 'id="section-finetuning"' in html and "Tiny + stepwise (seed 1)" in html
    assert "stepwise" in html and 'id="finetuning-recipes-' in html


def test_a_report_without_fine_tuned_models_has_no_fine_tuning_section(paired_run):
    from reports.document import SECTIONS, report_document

    doc = report_document(runs=[paired_run(models=("tiny-base",))])
    assert [e["key"] for e in doc["section_order"]] == [k for k, _ in SECTIONS] and "finetuning" not in doc["sections"]
