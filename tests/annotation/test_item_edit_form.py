"""The item edit page: the gold is clicked (radio buttons, checkboxes) or drawn (four pixel fields the
viewer fills), never typed to match an option; what is wrong is said on the form, and the same checks
hold for the API (annotation.services.qa.gold_errors)."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import ImportBatch, QAItem, TaskCategory
from annotation.services.images import BytesSource, images_import
from annotation.services.qa import box_errors, chain_create, qa_item_create
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db

WIDTH, HEIGHT = 80, 60


@pytest.fixture
def make_item(curator):
    image = images_import(sources=[BytesSource("edit.png", png_bytes(size=(WIDTH, HEIGHT), color=90))],
                          actor=curator, source=ImportBatch.Source.UPLOAD).images.get()
    chain = chain_create(image=image, actor=curator)
    steps = iter(range(1, 100))

    def _make(code: str, options: list, gold):
        return qa_item_create(chain=chain, step=next(steps), category=TaskCategory.objects.get(code=code),
                              question=f"Question for {code}?", options=options, gold_answer=gold, actor=curator)

    return _make


@pytest.fixture
def client(curator):
    c = Client()
    c.force_login(curator)
    return c


def _url(item):
    return reverse("annotation:item-edit", kwargs={"pk": item.pk})


def _current(item):
    return QAItem.objects.get(item_key=item.item_key, is_current=True)


def _inputs(html: str, kind: str) -> list[tuple[str, bool]]:
    """(value, checked) of every <input type=kind name=gold_answer>."""
    found = re.findall(rf'<input type="{kind}" name="gold_answer" value="([^"]*)"( checked)?>', html)
    return [(value, bool(checked)) for value, checked in found]


def test_single_choice_gold_is_a_radio_button_per_option(make_item, client):
    item = make_item("modality", ["CT", "MR", "US"], "MR")
    html = client.get(_url(item)).content.decode()
    assert _inputs(html, "radio") == [("CT", False), ("MR", True), ("US", False)]
    assert 'name="gold_answer"' not in html.replace('type="radio" name="gold_answer"', "")   # no text box for it
    response = client.post(_url(item), {"question": item.question, "options": "CT\nMR\nUS", "gold_answer": "US",
                                        "reason": "radiologist: it is ultrasound"})
    assert response.status_code == 302
    assert _current(item).gold_answer == "US" and _current(item).version == 2


def test_a_gold_that_is_not_an_option_is_refused_on_the_form(make_item, client):
    item = make_item("modality", ["CT", "MR"], "CT")
    response = client.post(_url(item), {"question": item.question, "options": "CT\nMR", "gold_answer": "PET",
                                        "reason": "typo"})
    assert response.status_code == 400
    assert "the gold answer must be one of the options" in response.content.decode()
    missing = client.post(_url(item), {"question": item.question, "options": "CT\nMR", "reason": "none picked"})
    assert missing.status_code == 400 and "click the correct option" in missing.content.decode()
    assert _current(item).version == 1


def test_options_and_gold_change_together_and_a_refused_save_keeps_what_was_typed(make_item, client):
    item = make_item("modality", ["CT", "MR"], "CT")
    refused = client.post(_url(item), {"question": item.question, "options": "CT\nMRI\nX-ray", "gold_answer": "MR",
                                       "reason": "options reworded"})
    assert refused.status_code == 400
    # the choices shown are the posted options, nothing checked that no longer exists
    assert _inputs(refused.content.decode(), "radio") == [("CT", False), ("MRI", False), ("X-ray", False)]
    saved = client.post(_url(item), {"question": item.question, "options": "CT\nMRI\nX-ray", "gold_answer": "MRI",
                                     "reason": "options reworded"})
    assert saved.status_code == 302
    assert (_current(item).options, _current(item).gold_answer) == (["CT", "MRI", "X-ray"], "MRI")


def test_multi_select_gold_is_ticked_checkboxes_stored_in_option_order(make_item, client):
    item = make_item("list-findings", ["cyst", "nodule", "mass", "calcification"], ["nodule"])
    html = client.get(_url(item)).content.decode()
    assert _inputs(html, "checkbox") == [("cyst", False), ("nodule", True), ("mass", False), ("calcification", False)]
    options = "cyst\nnodule\nmass\ncalcification"
    response = client.post(_url(item), {"question": item.question, "options": options,
                                        "gold_answer": ["calcification", "cyst"], "reason": "two findings"})
    assert response.status_code == 302
    assert _current(item).gold_answer == ["cyst", "calcification"]
    none = client.post(_url(_current(item)), {"question": item.question, "options": options, "reason": "none"})
    assert none.status_code == 400 and "pick at least one correct option" in none.content.decode()


def test_yes_no_offers_its_two_answers_and_no_options_box(make_item, client):
    item = make_item("normal-vs-abnormal", ["yes", "no"], "no")
    html = client.get(_url(item)).content.decode()
    assert _inputs(html, "radio") == [("yes", False), ("no", True)]
    assert 'name="options"' not in html
    response = client.post(_url(item), {"question": item.question, "gold_answer": "yes", "reason": "a lesion"})
    assert response.status_code == 302
    assert (_current(item).options, _current(item).gold_answer) == (["yes", "no"], "yes")


def test_box_gold_is_four_pixel_fields_the_viewer_fills(make_item, client):
    item = make_item("anatomy-box", [], [10.0, 12.0, 40.5, 30.0])
    html = client.get(_url(item)).content.decode()
    for name, value in (("box_x0", "10"), ("box_y0", "12"), ("box_x1", "40.5"), ("box_y1", "30")):
        assert re.search(rf'<input type="number" name="{name}" value="{value}"', html), name
    assert 'id="item-edit-form"' in html and f'data-image-width="{WIDTH}"' in html and "js/item_edit.js" in html
    response = client.post(_url(item), {"question": item.question, "box_x0": "5", "box_y0": "6", "box_x1": "50.2",
                                        "box_y1": "44", "reason": "drawn tighter"})
    assert response.status_code == 302
    assert _current(item).gold_answer == [5.0, 6.0, 50.2, 44.0]


@pytest.mark.parametrize("box,message", [
    (("5", "6", "95", "44"), f"x1 = 95 is past the right edge (the image is {WIDTH} px wide)"),
    (("-1", "6", "50", "44"), "x0 = -1 is left of the image"),
    (("5", "6", "50", "70"), f"y1 = 70 is below the bottom edge (the image is {HEIGHT} px high)"),
    (("50", "6", "5", "44"), "x1 (5) must be greater than x0 (50)"),
    (("5", "6", "", "44"), "This field is required"),
])
def test_a_box_outside_the_image_is_refused_with_a_clear_error(make_item, client, box, message):
    item = make_item("anatomy-box", [], [10.0, 12.0, 40.0, 30.0])
    data = dict(zip(("box_x0", "box_y0", "box_x1", "box_y1"), box, strict=True))
    response = client.post(_url(item), {"question": item.question, "reason": "bad box", **data})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert _current(item).version == 1


def test_the_api_refuses_the_same_boxes(make_item, client):
    item = make_item("anatomy-box", [], [10.0, 12.0, 40.0, 30.0])
    response = client.patch(reverse("annotation:api-item-detail", kwargs={"pk": item.pk}),
                            {"gold_answer": [5, 6, 95, 44], "reason": "api"}, content_type="application/json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and "past the right edge" in body["detail"]


def test_box_errors_name_every_problem():
    assert box_errors([0, 0, WIDTH, HEIGHT], width=WIDTH, height=HEIGHT) == []
    assert box_errors([1, 2, 3], width=WIDTH, height=HEIGHT) == [
        "a box is four numbers: x0, y0 (top left), x1, y1 (bottom right), in pixels"]
    assert len(box_errors([-1, -1, WIDTH + 1, HEIGHT + 1], width=WIDTH, height=HEIGHT)) == 4
    assert box_errors([1, 2, 1, 5], width=WIDTH, height=HEIGHT) == ["x1 (1) must be greater than x0 (1)"]
