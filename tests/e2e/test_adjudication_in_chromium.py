"""The radiologist's adjudication flow in Debian chromium: queue -> case -> keyboard verdict -> next
case; the conflict path when two adjudicators save the same case. Screenshots land in
$MEDR2_SCREENSHOT_DIR (default /tmp/medr2-screenshots) as test artifacts."""
from __future__ import annotations

import re

import pytest

from accounts.roles import Role
from adjudication.models import AdjudicationCase

from ..adjudication.test_facts import scored  # noqa: F401  (fixture)
from ..adjudication.test_verdicts import consensus_case  # noqa: F401  (fixture)
from .test_pages_in_chromium import SCREENSHOTS, _login, browser  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_cases(consensus_case):  # noqa: F811
    """The consensus case plus a second open case on another item of the chain (lower priority)."""
    from annotation.models import QAItem

    first = consensus_case["case"]
    other = (QAItem.objects.filter(chain=first.item.chain, is_current=True, category__answer_type="single_choice")
             .exclude(item_key=first.item_key).order_by("step").first())
    AdjudicationCase.objects.filter(priority__gte=0).exclude(pk=first.pk).delete()
    second = AdjudicationCase.objects.create(
        key=f"item:{other.item_key}", item=other, item_key=other.item_key, image=other.chain.image,
        stage=other.stage, category=other.category, modality=first.modality, rules=",adversarial_flip,",
        hits=[{"rule": "adversarial_flip", "priority": 0.5, "models": ["model-a"], "evidence": {}}],
        priority=0.5, run_ids=first.run_ids)
    return first, second


def test_adjudicator_resolves_a_case_with_the_keyboard_and_lands_on_the_next(browser, live_server, users,  # noqa: F811
                                                                           two_cases):
    first, second = two_cases
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    _login(page, live_server.url, users[Role.ADJUDICATOR].username)
    page.click("text=Adjudication")
    page.wait_for_selector("table.queue")
    assert page.locator("table.queue tbody tr").count() == 2
    assert "model-a" not in page.content(), "model names are hidden from readers"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "adjudication-queue.png"), full_page=True)

    page.click("#start-reading")
    page.wait_for_url(re.compile(rf"/adjudication/cases/{first.pk}/$"))
    page.wait_for_function("() => document.querySelector('section.mv').dataset.mvState === 'pixels'")
    # the viewer (docs/viewer.md): zoom with the keyboard, hide the gold layer, a window preset
    viewer = "MedViewer.get(document.querySelector('section.mv'))"
    full = page.evaluate(f"() => {viewer}.getView().scale")
    page.keyboard.press("+")
    assert page.evaluate(f"() => {viewer}.getView().scale") > full
    page.keyboard.press("0")
    page.keyboard.press("g")
    assert page.locator('.mv-legend input[data-layer="gold"]').is_checked() is False
    assert page.locator('.mv-overlay [data-layer="gold"]').count() == 0
    page.keyboard.press("g")
    page.select_option("section.mv .mv-preset", "auto")
    assert page.evaluate(f"() => {viewer}.getWindow().width") > 0
    assert page.locator("table.chain tbody tr").count() >= 4
    page.screenshot(path=str(SCREENSHOTS / "adjudication-case.png"), full_page=True)

    page.keyboard.press("Enter")                      # no verdict yet: the page says what to do
    assert "Choose a verdict" in page.locator("#verdict-error").inner_text()
    page.keyboard.press("c")
    assert page.locator("#v-confirmed").is_checked()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/adjudication/cases/{second.pk}/$"))
    assert "was saved" in page.locator(".msg").first.inner_text()
    first.refresh_from_db()
    assert first.status == "resolved" and first.outcome == "confirmed"
    reading = first.readings.get()
    assert reading.time_spent_s is not None and reading.time_spent_s > 0

    # second case: correct the gold with the keyboard (E, then the option's number)
    options = second.item.options
    new_index = next(i for i, o in enumerate(options) if o != second.item.gold_answer)
    page.keyboard.press("e")
    page.keyboard.press(str(new_index + 1))
    page.fill("#comment", "the option order was misleading")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"/adjudication/$"))         # nothing left: back to the queue
    second.refresh_from_db()
    assert second.outcome == "corrected" and second.outcome_answer == options[new_index]
    assert second.result_item.gold_answer == options[new_index]


def test_the_second_adjudicator_sees_the_conflict_message(browser, live_server, users, make_user,  # noqa: F811
                                                          two_cases):
    first, _ = two_cases
    colleague = make_user(Role.ADJUDICATOR, "dr-colleague")
    mine = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    theirs = browser.new_context().new_page()
    for page, user in ((mine, users[Role.ADJUDICATOR]), (theirs, colleague)):
        _login(page, live_server.url, user.username)
        page.goto(f"{live_server.url}/adjudication/cases/{first.pk}/")
        page.wait_for_selector("#verdict-form")
    theirs.keyboard.press("a")
    theirs.keyboard.press("Enter")
    theirs.wait_for_url(re.compile(r"/adjudication/(cases/\d+/)?$"))

    mine.keyboard.press("f")
    mine.fill("#comment", "I think the item is flawed")
    mine.keyboard.press("Control+Enter")
    mine.wait_for_selector("#conflict")
    text = mine.locator("#conflict").inner_text()
    assert "dr-colleague" in text and "not saved" in text
    assert mine.locator("textarea.unsaved-comment").input_value() == "I think the item is flawed"
    mine.screenshot(path=str(SCREENSHOTS / "adjudication-conflict.png"), full_page=True)
    first.refresh_from_db()
    assert first.outcome == "ambiguous" and first.resolved_by_id == colleague.pk


def test_adjudicator_redraws_a_box_with_the_mouse(browser, live_server, users, scored):  # noqa: F811
    import json

    from annotation.models import QAItem

    item = QAItem.objects.filter(category__answer_type="box", is_current=True).order_by("pk").first()
    case = AdjudicationCase.objects.create(
        key=f"item:{item.item_key}", item=item, item_key=item.item_key, image=item.chain.image, stage=item.stage,
        category=item.category, rules=",right_answer_wrong_evidence,", hits=[], priority=0.9)
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    _login(page, live_server.url, users[Role.ADJUDICATOR].username)
    page.goto(f"{live_server.url}/adjudication/cases/{case.pk}/")
    page.wait_for_function("() => document.querySelector('section.mv').dataset.mvState === 'pixels'")
    assert page.locator("section.mv button[data-tool=draw]").is_visible()
    page.keyboard.press("d")
    assert page.locator("#v-corrected").is_checked()
    svg = page.locator("section.mv .mv-stage").bounding_box()
    page.mouse.move(svg["x"] + svg["width"] * 0.3, svg["y"] + svg["height"] * 0.3)
    page.mouse.down()
    page.mouse.move(svg["x"] + svg["width"] * 0.5, svg["y"] + svg["height"] * 0.55, steps=5)
    page.mouse.up()
    box = json.loads(page.locator("#box-answer").input_value())
    w, h = item.chain.image.width, item.chain.image.height
    assert len(box) == 4 and 0 <= box[0] < box[2] <= w and 0 <= box[1] < box[3] <= h
    page.screenshot(path=str(SCREENSHOTS / "adjudication-redraw-box.png"), full_page=False)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "was saved" in page.locator(".msg").first.inner_text(), page.locator("main").inner_text()[:500]
    case.refresh_from_db()
    assert case.outcome == "corrected" and case.result_item.gold_answer == [float(v) for v in box]
