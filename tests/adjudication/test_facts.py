"""The detection rules on constructed runs in the database (facts.py reads the rows)."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(phantom_images):
    """One phantom chain (every applicable category), three models, one completed reference run, clean
    variants. The models use the planted `oracle` backend (not a baseline: baselines never count as
    models); their predictions are written by the tests."""
    from annotation.chains.generator import ChainPolicy
    from annotation.models import QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate
    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.runs import run_create

    (image,) = phantom_images(1)
    chains_generate(image_ids=[image.pk], actor=None, seed=0, policy=ChainPolicy(steps_per_stage=8))
    QAItem.objects.update(status=QAItem.Status.APPROVED)
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0, kinds=[])
    endpoints = [endpoint_create(name=f"model-{c}", backend="oracle", actor=None) for c in "abc"]
    run = run_create(name="constructed", endpoints=endpoints, actor=None, split="all", start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.COMPLETED, is_reference=True)
    run.refresh_from_db()
    return {"run": run, "endpoints": endpoints, "image": image}


def _predict(run, endpoint, variant, letter, correct):
    from workers.models import Prediction

    Prediction.objects.create(run=run, endpoint=endpoint, variant=variant, item=variant.item, outcome="answered",
                              parsed=letter, parse_method="letter_bare", correct=correct)


def test_three_models_agreeing_on_a_wrong_option_open_a_consensus_case(scored):
    from adjudication.facts import detect_cases
    from annotation.models import QAItem, Variant

    item = QAItem.objects.filter(category__answer_type="single_choice").order_by("pk").first()
    variant = Variant.objects.get(item=item, kind="clean")
    gold_index = variant.options.index(item.gold_answer)
    wrong = chr(65 + (gold_index + 1) % len(variant.options))
    for endpoint in scored["endpoints"]:
        _predict(scored["run"], endpoint, variant, wrong, False)

    cases = detect_cases(run_ids=[scored["run"].pk])
    (case,) = [c for c in cases if c.item_id == item.pk]
    (hit,) = case.hits
    assert hit.rule == "model_consensus" and hit.models == ("model-a", "model-b", "model-c")
    assert hit.evidence["answer"] == variant.options[ord(wrong) - 65], "letters are compared as option texts"
    assert hit.evidence["gold"] == item.gold_answer and hit.priority == 1.0
    assert case.key == f"item:{item.item_key}"


def test_models_agreeing_with_gold_open_nothing_and_annotator_conflicts_do(scored):
    from adjudication.facts import detect_cases
    from annotation.models import QAItem, Variant
    from labelstudio.models import AnnotatorDisagreement
    from labelstudio.services import batch_create

    item = QAItem.objects.filter(category__answer_type="single_choice").order_by("pk").first()
    variant = Variant.objects.get(item=item, kind="clean")
    right = chr(65 + variant.options.index(item.gold_answer))
    for endpoint in scored["endpoints"]:
        _predict(scored["run"], endpoint, variant, right, True)
    assert [c for c in detect_cases(run_ids=[scored["run"].pk]) if c.item_id == item.pk] == []

    batch = batch_create(name="qa", qa_items=[item], actor=None)
    AnnotatorDisagreement.objects.create(task=batch.tasks.get(), image=scored["image"], qa_item=item,
                                         kinds=["answer", "gold_answer"], detail=[])
    (case,) = [c for c in detect_cases(run_ids=[scored["run"].pk]) if c.item_id == item.pk]
    assert [h.rule for h in case.hits] == ["annotator_disagreement"] and case.priority == 0.8


def test_find_disagreements_command_prints_the_cases(scored, capsys):
    from annotation.models import QAItem, Variant

    item = QAItem.objects.filter(category__answer_type="single_choice").order_by("pk").first()
    variant = Variant.objects.get(item=item, kind="clean")
    wrong = chr(65 + (variant.options.index(item.gold_answer) + 1) % len(variant.options))
    for endpoint in scored["endpoints"]:
        _predict(scored["run"], endpoint, variant, wrong, False)
    call_command("find_disagreements", "--run", str(scored["run"].pk))
    out = capsys.readouterr().out
    assert "1 case(s); hits by rule: model_consensus 1" in out
    call_command("find_disagreements", "--run", str(scored["run"].pk), "--json")
    line = json.loads(capsys.readouterr().out.strip().splitlines()[0])
    assert line["hits"][0]["rule"] == "model_consensus"
    with pytest.raises(Exception, match="unknown rule"):
        call_command("find_disagreements", "--run", str(scored["run"].pk), "--rules", "nonsense")


def test_find_disagreements_save_stores_the_cases_once(scored, capsys):
    from adjudication.models import AdjudicationCase
    from annotation.models import QAItem, Variant

    item = QAItem.objects.filter(category__answer_type="single_choice").order_by("pk").first()
    variant = Variant.objects.get(item=item, kind="clean")
    wrong = chr(65 + (variant.options.index(item.gold_answer) + 1) % len(variant.options))
    for endpoint in scored["endpoints"]:
        _predict(scored["run"], endpoint, variant, wrong, False)
    call_command("find_disagreements", "--run", "latest", "--save")
    call_command("find_disagreements", "--run", "latest", "--save")
    assert "0 case(s) opened" in capsys.readouterr().out.strip().splitlines()[-1]
    assert AdjudicationCase.objects.filter(item=item).count() == 1
