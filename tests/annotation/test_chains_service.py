"""Chains and variants through the services: bulk writes, determinism, idempotence, validation,
review, lineage, exact rendering, curator pages."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from PIL import Image as PILImage

from accounts.roles import Role
from annotation import storage
from annotation.chains import generate_chain
from annotation.chains.balance import Balancer
from annotation.models import Chain, QAItem, TaskCategory, Variant
from annotation.services.chains import category_definitions, chains_generate, image_facts
from annotation.services.qa import qa_item_revise, qa_items_review
from annotation.services.variants import variants_generate
from annotation.variants import pixel_box
from audit.models import AuditEvent
from audit.services import audit_verify

pytestmark = pytest.mark.django_db


@pytest.fixture
def generated(phantom_images):
    images = phantom_images(6)
    summary = chains_generate(image_ids=[i.pk for i in images], actor=None, seed=0)
    return images, summary


def _rows(chain_qs):
    return [(it.chain.image_id, it.step, it.category.code, it.question, it.options, it.gold_answer)
            for it in QAItem.objects.filter(chain__in=chain_qs).select_related("chain", "category")
            .order_by("chain__image_id", "step")]


def test_chains_are_generated_in_stage_order_with_evidence(generated):
    images, summary = generated
    assert summary.chains == len(images) and summary.items >= 2 * len(images)
    assert summary.invalid_steps == 0
    for chain in Chain.objects.all():
        items = list(chain.items.select_related("stage", "category").order_by("step"))
        stages = [it.stage.code for it in items]
        assert stages == sorted(stages) and stages[0] == "S1"
        for it in items:
            assert it.stage_id == it.category.stage_id and it.status == "draft" and it.version == 1
            for box in it.evidence_boxes.all():
                assert box.image_id == chain.image_id
    assert AuditEvent.objects.filter(action="annotation.chain.generate_batch").exists()
    call_command("check_items")  # no violations


def test_generation_matches_the_pure_generator_and_is_idempotent(generated):
    images, _ = generated
    ids = [i.pk for i in images]
    facts = image_facts(ids)
    defs = [d for d, _ in category_definitions().values()]
    stored = _rows(Chain.objects.filter(seed=0))
    balancer = Balancer()        # the service balances answers across the images, in id order
    expected = [(i, s.step, s.category, s.question, s.options, s.gold)
                for i in sorted(ids) for s in generate_chain(facts[i], defs, seed=0, balancer=balancer)]
    assert stored == expected
    again = chains_generate(image_ids=ids, actor=None, seed=0)
    assert again.chains == 0 and again.skipped_existing == len(ids)
    assert _rows(Chain.objects.filter(seed=0)) == stored


def test_another_seed_changes_option_order(generated):
    from annotation.chains import ChainPolicy

    images, _ = generated
    # one category per stage, so both seeds ask the same questions and only the order can differ
    policy = ChainPolicy(include_categories=frozenset({"modality", "lesion-location", "margin", "diagnosis"}))
    for seed in (1, 2):
        chains_generate(image_ids=[i.pk for i in images], actor=None, seed=seed, policy=policy)
    a = {(r[0], r[2]): r[4] for r in _rows(Chain.objects.filter(seed=1))}
    b = {(r[0], r[2]): r[4] for r in _rows(Chain.objects.filter(seed=2))}
    shared = [k for k in a if k in b and len(a[k]) > 2]
    assert len(shared) >= len(images) // 2   # balance may skip a category on some images
    assert any(a[k] != b[k] for k in shared)


def test_check_items_reports_a_broken_item(generated):
    item = QAItem.objects.filter(category__answer_type="single_choice").first()
    QAItem.objects.filter(pk=item.pk).update(gold_answer="not an option")
    with pytest.raises(CommandError, match="violation"):
        call_command("check_items")


def test_bulk_review_is_audited_and_refuses_old_versions(generated, curator):
    items = list(QAItem.objects.order_by("pk")[:5])
    assert qa_items_review(item_ids=[i.pk for i in items], status="approved", actor=curator) == 5
    assert set(QAItem.objects.filter(pk__in=[i.pk for i in items]).values_list("status", flat=True)) == {"approved"}
    event = AuditEvent.objects.filter(action="annotation.qa_item.review").latest("seq")
    assert event.after["item_ids"] == sorted(i.pk for i in items) and event.actor == curator
    first = items[0]
    qa_item_revise(item=first, actor=curator, reason="wording", question=first.question + " (revised)")
    with pytest.raises(Exception, match="old versions"):
        qa_items_review(item_ids=[first.pk], status="rejected", actor=curator)


def test_variants_have_lineage_and_are_idempotent(generated):
    QAItem.objects.update(status="approved")
    ids = list(QAItem.objects.values_list("pk", flat=True))
    summary = variants_generate(items=ids, actor=None, seed=0)
    assert summary.variants > len(ids)
    for item_id in ids[:10]:
        variants = list(Variant.objects.filter(item_id=item_id))
        clean = [v for v in variants if v.kind == "clean"]
        assert len(clean) == 1 and clean[0].parent_id is None
        assert all(v.parent_id == clean[0].pk for v in variants if v.kind != "clean")
    for v in Variant.objects.filter(kind="option_permutation", item__category__answer_type="single_choice")[:20]:
        expected = v.expected_answer
        assert v.options[ord(expected["letter"]) - ord("A")] == expected["value"]
    again = variants_generate(items=ids, actor=None, seed=0)
    assert again.variants == 0 and again.skipped_existing == len(ids)
    assert audit_verify().ok


def test_visual_variant_is_rendered_exactly_where_the_box_is(generated, curator, storage_root):
    QAItem.objects.update(status="approved")
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0)
    def big_box(v):  # room for an interior pixel, and for the label above the box
        box = v.image_recipe["draw"][0]["box"]
        return box[2] - box[0] >= 12 and box[3] - box[1] >= 12 and box[1] >= 20

    variant = next(v for v in Variant.objects.filter(kind="correct_visual_cue").select_related("item__chain__image")
                   if big_box(v))
    draw = variant.image_recipe["draw"][0]
    x0, y0, x1, y1 = pixel_box(draw["box"])  # fractional corners round outward
    client = Client()
    client.force_login(curator)
    response = client.get(reverse("annotation:variant-image", kwargs={"pk": variant.pk}))
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    png = b"".join(response.streaming_content)
    rendered = PILImage.open(io.BytesIO(png)).convert("RGB")
    image = variant.item.chain.image
    base = PILImage.open(storage.resolve(image.file)).convert("RGB")
    assert rendered.size == base.size == (image.width, image.height)
    color = tuple(draw["color"])
    mid_x, mid_y = (x0 + x1) // 2, (y0 + y1) // 2
    # the outline is on the box's own border pixels (x1/y1 exclusive) ...
    for xy in [(x0, y0), (x1 - 1, y1 - 1), (mid_x, y0), (x0, mid_y), (x1 - 1, mid_y), (mid_x, y1 - 1)]:
        assert rendered.getpixel(xy) == color, xy
    # ... and nowhere outside it or inside it (those pixels are the original image's)
    for xy in [(x0 - 1, mid_y), (x1, mid_y), (mid_x, y1), (mid_x, mid_y)]:
        if 0 <= xy[0] < image.width and 0 <= xy[1] < image.height:
            assert rendered.getpixel(xy) == base.getpixel(xy), xy
    # rendered once, then served from the cache: identical bytes through the API
    again = client.get(reverse("annotation:api-variant-image", kwargs={"pk": variant.pk}))
    assert b"".join(again.streaming_content) == png


def test_curator_edits_an_item_on_the_page(generated, curator):
    item = QAItem.objects.filter(category__answer_type="single_choice").first()
    client = Client()
    client.force_login(curator)
    page = client.get(reverse("annotation:item-edit", kwargs={"pk": item.pk}))
    assert page.status_code == 200 and item.question.encode()[:20] in page.content
    bad = client.post(reverse("annotation:item-edit", kwargs={"pk": item.pk}), {
        "question": item.question, "options": "\n".join(item.options), "gold_answer": "nowhere", "reason": "test"})
    assert bad.status_code == 400 and b"gold answer must be one of the options" in bad.content
    good = client.post(reverse("annotation:item-edit", kwargs={"pk": item.pk}), {
        "question": "Reworded: " + item.question, "options": "\n".join(item.options),
        "gold_answer": item.gold_answer, "reason": "clearer wording"})
    assert good.status_code == 302
    new = QAItem.objects.get(item_key=item.item_key, is_current=True)
    assert new.version == 2 and new.question.startswith("Reworded") and new.change_reason == "clearer wording"
    item.refresh_from_db()
    assert not item.is_current and not item.question.startswith("Reworded")
    detail = client.get(reverse("annotation:item-detail", kwargs={"pk": new.pk}))
    assert b"clearer wording" in detail.content


def test_chain_page_and_bulk_review_from_the_item_list(generated, curator):
    chain = Chain.objects.first()
    client = Client()
    client.force_login(curator)
    page = client.get(reverse("annotation:chain-detail", kwargs={"pk": chain.pk}))
    assert page.status_code == 200 and b"<svg" in page.content
    ids = list(chain.items.values_list("pk", flat=True))
    response = client.post(reverse("annotation:item-review"), {"ids": ids, "status": "approved", "next": "/items/"})
    assert response.status_code == 302
    assert set(QAItem.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"approved"}
    listing = client.get(reverse("annotation:item-list"), {"status": "approved", "stage": "S1"})
    assert listing.status_code == 200 and b"Approve selected" in listing.content


def test_category_definitions_are_validated_on_edit(generated, curator):
    client = Client()
    client.force_login(curator)
    category = TaskCategory.objects.get(code="margin")
    url = reverse("annotation:category-edit", kwargs={"code": "margin"})
    form = {"name": category.name, "prompt_template": "What is the margin of the {no_such_placeholder}?",
            "alt_templates": "", "rule": '{"kind": "no-such-kind"}', "is_active": "on", "description": ""}
    assert client.post(url, form).status_code == 400
    assert client.post(url, {**form, "rule": "{not json"}).status_code == 400
    import json
    good = {**form, "prompt_template": category.prompt_template, "rule": json.dumps(category.rule),
            "alt_templates": "Describe the margin of the {finding}."}
    response = client.post(url, good)
    assert response.status_code == 302, response.content[:2000]
    category.refresh_from_db()
    assert category.alt_templates == ["Describe the margin of the {finding}."]
    assert AuditEvent.objects.filter(action="annotation.category.update", object_id=str(category.pk)).exists()


def test_openapi_schema_validates(curator):
    from openapi_spec_validator import validate

    client = Client()
    client.force_login(curator)
    response = client.get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    spec = response.json()
    validate(spec)
    assert "/api/items/{id}/" in spec["paths"] and "patch" in spec["paths"]["/api/items/{id}/"]
    docs = client.get(reverse("api-docs"))
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()


def test_curator_adds_a_category_and_it_is_used(phantom_images, curator):
    import json

    client = Client()
    client.force_login(curator)
    margin = TaskCategory.objects.get(code="margin")
    form = {"code": "margin-twin", "stage": margin.stage_id, "answer_type": "single_choice", "name": "Margin (twin)",
            "prompt_template": "Which word best describes the edge of {lesion}?", "alt_templates": "",
            "rule": json.dumps(margin.rule), "is_active": "on", "description": "added by a curator"}
    bad = client.post(reverse("annotation:category-create"), {**form, "prompt_template": "Edge of the {nonsense}?"})
    assert bad.status_code == 400 and b"nonsense" in bad.content
    assert client.post(reverse("annotation:category-create"), form).status_code == 302
    created = TaskCategory.objects.get(code="margin-twin")
    assert created.stage.code == "S3"
    assert AuditEvent.objects.filter(action="annotation.category.create", object_id=str(created.pk)).exists()
    # only this category at S3: every chain with a lesion now asks it
    from annotation.chains import ChainPolicy

    images = phantom_images(6)
    s3 = frozenset({"margin-twin"} | set(TaskCategory.objects.exclude(stage__code="S3").values_list("code", flat=True)))
    chains_generate(image_ids=[i.pk for i in images], actor=curator, seed=0, policy=ChainPolicy(include_categories=s3))
    asked = QAItem.objects.filter(category=created)
    assert asked.exists() and all(q.question == "Which word best describes the edge of the largest lesion?"
                                  for q in asked)
    # a template that names the finding at S3 gives the S2 answer away: every such step is refused
    TaskCategory.objects.filter(code="margin-twin").update(prompt_template="Edge of the {finding}?")
    summary = chains_generate(image_ids=[i.pk for i in images], actor=curator, seed=1,
                              policy=ChainPolicy(include_categories=s3))
    assert summary.invalid_steps and "names the finding" in summary.violations[0]


def test_api_lists_chains_and_variants_scoped_to_the_user(generated, users):
    QAItem.objects.update(status="approved")
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0)
    curator, adjudicator, annotator = Client(), Client(), Client()
    curator.force_login(users[Role.CURATOR])
    adjudicator.force_login(users[Role.ADJUDICATOR])
    annotator.force_login(users[Role.ANNOTATOR])
    chains = curator.get(reverse("annotation:api-chain-list")).json()
    assert chains["count"] == Chain.objects.count() and chains["results"][0]["n_items"] >= 2
    hints = curator.get(reverse("annotation:api-variant-list"), {"kind": "misleading_hint"}).json()
    assert hints["count"] == Variant.objects.filter(kind="misleading_hint").count() > 0
    assert all(v["expected_answer"]["value"] != v["params"]["hinted_option"] for v in hints["results"])
    # scoped to the images assigned (none here); annotators see no chains or variants at all (blinding)
    assert adjudicator.get(reverse("annotation:api-chain-list")).json()["count"] == 0
    assert adjudicator.get(reverse("annotation:api-variant-list")).json()["count"] == 0
    assert annotator.get(reverse("annotation:api-chain-list")).status_code == 403
    assert annotator.get(reverse("annotation:api-variant-list")).status_code == 403


def test_an_accepted_pre_annotation_repeating_a_box_adds_no_finding(curator):
    """A reader who submits a pre-filled box unchanged (Label Studio correction batch) confirms that box: it is
    no second lesion for counts or evidence. An accepted box with no twin (a model's box a reader accepted)
    stays: it is the only box of its finding."""
    from annotation.models import GroundingBox, ImportBatch
    from annotation.services.chains import image_facts
    from annotation.services.findings import finding_create
    from annotation.services.images import BytesSource, images_import
    from tests.conftest import png_bytes

    batch = images_import(sources=[BytesSource("a.png", png_bytes(size=(200, 200)))], actor=curator,
                          source=ImportBatch.Source.UPLOAD)
    image = batch.images.get()
    finding_create(image=image, kind="lesion", label="cyst", actor=curator, source="manual", box=(10, 10, 60, 60))
    twin = finding_create(image=image, kind="lesion", label="cyst", actor=curator, source="label_studio",
                          box=(10.5, 10, 60, 60.5))
    alone = finding_create(image=image, kind="lesion", label="cyst", actor=curator, source="label_studio",
                           box=(120, 120, 170, 170))
    GroundingBox.objects.filter(finding__in=[twin, alone]).update(provenance="accepted")
    facts = image_facts([image.pk])[image.pk]
    assert sorted(b.xyxy for b in facts.boxes) == [(10, 10, 60, 60), (120, 120, 170, 170)]
    GroundingBox.objects.filter(finding=twin).update(provenance="modified")
    assert len(image_facts([image.pk])[image.pk].boxes) == 3, "a modified box is the reader's own"
