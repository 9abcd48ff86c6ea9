"""The curator's workflow in Debian chromium: the gold picked by clicking an option or drawn on the
viewer (static/js/item_edit.js), the run form's live count (static/js/run_form.js), and the chain page
that checks nothing until asked (static/js/review_selection.js). Every test fails on a console error."""
from __future__ import annotations

import re

import pytest

from annotation.models import QAItem, TaskCategory
from annotation.services.images import BytesSource, images_import
from annotation.services.qa import chain_create, qa_item_create
from tests.conftest import png_bytes

from .test_pages_in_chromium import browser  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
VIEWER = "section.mv"


@pytest.fixture
def item_of(curator):
    image = images_import(sources=[BytesSource("wf.png", png_bytes(size=(120, 90), color=70))],
                          actor=curator).images.get()
    chain = chain_create(image=image, actor=curator)

    def _make(code, options, gold, step=1):
        return qa_item_create(chain=chain, step=step, category=TaskCategory.objects.get(code=code),
                              question=f"Question {step}?", options=options, gold_answer=gold, actor=curator)

    return _make


def _current(item):
    return QAItem.objects.get(item_key=item.item_key, is_current=True)


def test_the_gold_is_clicked_and_follows_the_options_as_they_are_typed(page_for, live_server, item_of):
    item = item_of("modality", ["CT", "MRR", "US"], "MRR")
    page = page_for()
    page.goto(f"{live_server.url}/items/{item.pk}/edit/")
    radios = page.locator("#gold-picker input[type=radio]")
    assert radios.count() == 3 and page.locator("#gold-picker input[value=MRR]").is_checked()
    page.fill("textarea[name=options]", "CT\nMR\nUS\nXR")             # the typo fixed in place, one option added
    assert page.locator("#gold-picker .choice-text").all_inner_texts() == ["CT", "MR", "US", "XR"]
    assert page.locator("#gold-picker input[value=MR]").is_checked(), "the corrected line keeps its tick"
    page.locator("#gold-picker label", has_text="XR").click()
    page.fill("input[name=reason]", "typo in an option; the gold is X-ray")
    page.click("#item-edit-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/items/\d+/$"))
    assert (_current(item).options, _current(item).gold_answer) == (["CT", "MR", "US", "XR"], "XR")


def test_a_box_drawn_on_the_viewer_fills_the_gold_box_fields(page_for, live_server, item_of):
    item = item_of("anatomy-box", [], [10.0, 10.0, 40.0, 30.0])
    page = page_for()
    page.goto(f"{live_server.url}/items/{item.pk}/edit/")
    page.wait_for_function(f"() => ['pixels', 'png'].includes(document.querySelector('{VIEWER}').dataset.mvState)")
    # what the viewer sends when a box is drawn (its own test draws with the mouse: tests/e2e/test_viewer.py)
    page.evaluate(f"() => document.querySelector('{VIEWER}').dispatchEvent(new CustomEvent('mv:boxdrawn', "
                  "{bubbles: true, detail: {x0: 12.3, y0: 20, x1: 80.5, y1: 61.2}}))")
    values = [page.input_value(f"input[name=box_{k}]") for k in ("x0", "y0", "x1", "y1")]
    assert values == ["12.3", "20", "80.5", "61.2"]
    assert "Box drawn" in page.inner_text(".box-hint")
    # typing shows the box on the viewer's "drawn" layer
    page.fill("input[name=box_x1]", "90")
    page.wait_for_function(f"() => document.querySelectorAll('{VIEWER} .mv-overlay [data-layer=\"drawn\"] "
                           "rect.mv-box').length === 1")
    assert float(page.locator(f"{VIEWER} .mv-overlay [data-layer='drawn'] rect.mv-box").get_attribute("data-x1")) == 90
    page.fill("input[name=reason]", "drawn on the image")
    page.click("#item-edit-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/items/\d+/$"))
    assert _current(item).gold_answer == [12.3, 20.0, 90.0, 61.2]


def test_an_out_of_bounds_box_comes_back_with_the_reason(page_for, live_server, item_of):
    item = item_of("anatomy-box", [], [10.0, 10.0, 40.0, 30.0])
    page = page_for()
    page.goto(f"{live_server.url}/items/{item.pk}/edit/")
    page.fill("input[name=box_x1]", "300")
    page.wait_for_function("() => document.querySelector('.box-hint').innerText.includes('Not a box yet')")
    assert "must lie inside the 120 × 90 image" in page.inner_text(".box-hint")
    page.fill("input[name=reason]", "too wide")
    page.click("#item-edit-form button[type=submit]")
    assert "x1 = 300 is past the right edge (the image is 120 px wide)" in page.inner_text(".msg.error")
    assert _current(item).version == 1
    # a refused form answers 400 (the page with its errors), which chromium logs: expected here
    page.errors[:] = [e for e in page.errors if "status of 400" not in e]


def test_the_run_form_counts_what_the_choices_select(page_for, live_server, phantom_images):
    from annotation.models import Variant
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate
    from workers.services.endpoints import endpoint_create

    images = phantom_images(2)
    chains_generate(image_ids=[i.pk for i in images], actor=None, seed=0)
    QAItem.objects.update(status="approved")
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0,
                      kinds=["clean", "misleading_hint"])
    made = {"variants": Variant.objects.count()}
    endpoint = endpoint_create(name="null-x", backend="null", actor=None)
    page = page_for()
    page.goto(f"{live_server.url}/runs/new/")
    summary = page.locator("#run-preview .run-preview-summary")
    page.wait_for_function("() => !document.querySelector('#run-preview').classList.contains('pending')")
    assert "Not startable yet: choose at least one model" in page.inner_text("#run-preview")
    page.select_option("select[name=split]", "all")
    page.check(f"input[name=endpoints][value='{endpoint.pk}']")
    page.wait_for_function("() => document.querySelector('#run-preview').innerText.includes('Ready to start')")
    text = summary.inner_text()
    items = QAItem.objects.filter(is_current=True, status="approved").count()
    assert text == f"{items} items · {made['variants']} variants · 1 model → {made['variants']} predictions"
    page.check("input[name=variant_kinds][value=clean]")
    page.wait_for_function(f"() => document.querySelector('#run-preview .run-preview-summary').innerText "
                           f"!== {text!r}")
    assert summary.inner_text() == f"{items} items · {items} variants · 1 model → {items} predictions"


def test_the_chain_page_checks_nothing_and_refuses_an_empty_review(page_for, live_server, item_of):
    items = [item_of("modality", ["CT", "MR"], "CT", step=n) for n in (1, 2, 3)]
    page = page_for()
    page.goto(f"{live_server.url}/chains/{items[0].chain_id}/")
    checks = page.locator("input.review-check")
    assert checks.count() == 3 and not any(checks.nth(n).is_checked() for n in range(3))
    page.click("button[value=rejected]")
    assert page.locator(".review-refused").is_visible()
    assert set(QAItem.objects.values_list("status", flat=True)) == {"draft"}, "nothing was rejected"
    page.click("button[data-review=all]")
    assert page.inner_text(".selection-count") == "3 of 3 steps checked."
    checks.nth(2).uncheck()
    page.click("button[value=approved]")
    page.wait_for_load_state()
    assert sorted(QAItem.objects.values_list("status", flat=True)) == ["approved", "approved", "draft"]
