"""Annotators read blind: for the very images and items they may be asked to annotate, no page or API
shows them a gold answer, a gold box, a finding or a model's output (accounts/roles.py, docs/security.md).

The annotator here is assigned the image, reads the Label Studio batch with its QA item, and the item
has variants, a scored run and a disagreement with the gold: everything there is to leak."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(phantom_images, users):
    from annotation.models import Finding, QAItem, Variant
    from annotation.services.chains import chains_generate
    from annotation.services.findings import finding_create
    from annotation.services.images import image_assign
    from annotation.services.variants import variants_generate
    from labelstudio.models import AnnotationTask
    from labelstudio.services import batch_create
    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    annotator, curator = users[Role.ANNOTATOR], users[Role.CURATOR]
    (image,) = phantom_images(1)
    finding_create(image=image, kind="lesion", label="hypodense nodule", actor=curator, source="manual",
                   box=(20, 20, 40, 44))
    chains_generate(image_ids=[image.pk], actor=None, seed=0)
    QAItem.objects.update(status="approved")
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0)
    endpoint = endpoint_create(name="random-guess", backend="random", actor=None)
    run = run_create(name="blind", endpoints=[endpoint], actor=None, split="all", start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING)
    for batch_id in run.batches.values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    image_assign(images=[image], user=annotator, actor=curator)
    item = QAItem.objects.filter(category__answer_type__in=["single_choice", "yes_no"]).order_by("pk").first()
    batch = batch_create(name="blind batch", qa_items=[item], readers=[annotator], maximum_annotations=2, actor=curator)
    AnnotationTask.objects.filter(batch=batch).update(has_disagreement=True, agreement={"box_f1": 0.5, "kappa": 0.1})
    client = Client()
    client.force_login(annotator)
    lesions = list(Finding.objects.filter(image=image, kind="lesion").values_list("label", flat=True))
    assert lesions, "the phantom has lesions to hide"
    return {"client": client, "image": image, "item": item, "chain": item.chain, "run": run, "batch": batch,
            "variant": Variant.objects.filter(item=item).exclude(image_recipe=None).first()
            or Variant.objects.filter(item=item).first(), "lesions": lesions, "curator": curator}


def test_no_qa_item_chain_or_variant_reaches_an_annotator(world):
    client, item = world["client"], world["item"]
    refused = {
        "item list": reverse("annotation:item-list"),
        "item page": reverse("annotation:item-detail", args=[item.pk]),
        "chain page": reverse("annotation:chain-detail", args=[world["chain"].pk]),
        "variant image": reverse("annotation:variant-image", args=[world["variant"].pk]),
        "item list API": reverse("annotation:api-item-list"),
        "item API": reverse("annotation:api-item-detail", args=[item.pk]),
        "item variants API": reverse("annotation:api-item-variants", args=[item.pk]),
        "chain list API": reverse("annotation:api-chain-list"),
        "chain API": reverse("annotation:api-chain-detail", args=[world["chain"].pk]),
        "variant list API": reverse("annotation:api-variant-list"),
        "variant API": reverse("annotation:api-variant-detail", args=[world["variant"].pk]),
        "variant image API": reverse("annotation:api-variant-image", args=[world["variant"].pk]),
    }
    answers = {name: client.get(url).status_code for name, url in refused.items()}
    assert answers == dict.fromkeys(refused, 403)
    assert 'href="/items/"' not in client.get(reverse("dashboard:index")).content.decode()   # nor in the navigation


def test_no_model_output_reaches_an_annotator(world):
    client, run = world["client"], world["run"]
    urls = [reverse("workers:run-list"), reverse("workers:run-detail", args=[run.pk]),
            reverse("workers:run-predictions", args=[run.pk]), reverse("workers:run-export", args=[run.pk, "csv"]),
            reverse("workers:api-run-results", args=[run.pk]), reverse("workers:api-run-predictions", args=[run.pk]),
            reverse("adjudication:queue"), reverse("adjudication:api-case-list")]
    assert {url: client.get(url).status_code for url in urls} == dict.fromkeys(urls, 403)


def test_the_image_page_and_api_show_no_findings_or_gold_boxes(world):
    client, image = world["client"], world["image"]
    page = client.get(reverse("annotation:image-detail", args=[image.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    leaked = [label for label in world["lesions"] if label in html]
    assert not leaked, f"finding labels on the annotator's image page: {leaked}"
    assert "data-box-id" not in html
    assert 'id="findings-hidden"' in html and "No findings yet" not in html   # hidden, not "none"
    assert "Gold" not in html, "no (empty) gold layer in the viewer: an empty one reads as 'no lesion'"
    body = client.get(reverse("annotation:api-image-detail", args=[image.pk])).json()
    assert body["boxes"] == [] and body["findings"] == []
    curator = Client()
    curator.force_login(world["curator"])
    assert curator.get(reverse("annotation:api-image-detail", args=[image.pk])).json()["boxes"], \
        "the curator still sees the boxes (the check above is not vacuous)"


def test_the_image_list_gives_no_lesion_counts(world):
    client, image = world["client"], world["image"]
    html = client.get(reverse("annotation:image-list")).content.decode()
    assert "lesion" not in html.lower()
    # "no lesions" would select exactly the images without a lesion: ignored for a blind reader
    listed = client.get(reverse("annotation:api-image-list"), {"has_findings": "no"}).json()
    assert [row["id"] for row in listed["results"]] == [image.pk]


def test_the_batch_page_and_api_hide_disagreements_and_item_links(world):
    client, batch, item = world["client"], world["batch"], world["item"]
    html = client.get(reverse("labelstudio:batch-detail", args=[batch.pk])).content.decode()
    assert item.question[:30] in html, "the reader sees the question they will answer"
    assert reverse("annotation:item-detail", args=[item.pk]) not in html
    assert "disagreement" not in html.lower() and "Agreement" not in html
    tasks = client.get(reverse("labelstudio:api-batch-tasks", args=[batch.pk])).json()["results"]
    assert tasks and all("has_disagreement" not in t and "agreement" not in t for t in tasks)
    only_disagreements = client.get(reverse("labelstudio:api-batch-tasks", args=[batch.pk]), {"disagreement": "1"})
    assert only_disagreements.json()["count"] == len(tasks), "cannot sort tasks by disagreement with the gold"
    assert "agreement" not in client.get(reverse("labelstudio:api-batch-detail", args=[batch.pk])).json()
    curator = Client()
    curator.force_login(world["curator"])
    assert "disagreement" in curator.get(reverse("labelstudio:batch-detail", args=[batch.pk])).content.decode()


def test_the_dashboard_shows_no_finding_counts(world):
    html = world["client"].get(reverse("dashboard:index")).content.decode()
    assert "active findings" not in html and "grounding boxes" not in html
    assert "QA items" not in html
