"""The comparison of a base model with its fine-tuned models as a curator sees it in Debian chromium: the form,
the models with their lineage and links, the tables with paired differences, the two figures (each model in
one colour everywhere), the per-recipe table, and the form narrowing the comparison to two models.
The screenshot lands at /tmp/finetune_compare.png (and in $MEDR2_SCREENSHOT_DIR)."""
from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.roles import Role
from common.palette import model_colour
from finetune.charts import BASE_COLOUR

from ..finetune.test_comparison import paired_run  # noqa: F401  (fixture)
from ..workers.conftest import eval_content, make_endpoint  # noqa: F401  (fixtures)
from .test_pages_in_chromium import SCREENSHOTS, _login, browser  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_curator_compares_a_base_model_with_its_fine_tuned_models(browser, live_server, users,  # noqa: F811
                                                                  paired_run):  # noqa: F811
    run = paired_run()
    fine_tuned_ids = list(run.endpoints.exclude(name="tiny-base").values_list("pk", flat=True))
    page = browser.new_page(viewport={"width": 1360, "height": 1000})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, live_server.url, users[Role.CURATOR].username)
    page.goto(f"{live_server.url}{reverse('finetune:compare')}?run={run.pk}")

    assert page.locator("h1").inner_text() == f"Compare models · run #{run.pk} base vs fine-tuned"
    assert page.locator("#id_run").input_value() == str(run.pk)
    rows = page.locator("#compare-models tbody tr")
    assert rows.count() == 4
    assert rows.nth(0).locator("td").nth(1).inner_text() == "base" and "Tiny base" in rows.nth(0).inner_text()
    assert "stepwise" in rows.nth(1).inner_text() and "fine-tuned" in rows.nth(1).inner_text()
    assert rows.nth(1).locator("a").get_attribute("href").startswith("/finetune/")          # its fine-tuning job
    assert page.locator("#compare-links a").first.get_attribute("href") == reverse("workers:run-detail",
                                                                                   args=[run.pk])
    for table in ("headline", "stages", "robustness", "adoption", "recipes"):
        assert page.locator(f"#compare-{table} tbody tr").count() >= 1, table
    headline = page.locator("#compare-headline tbody tr").first.inner_text()
    assert headline.startswith("Clean accuracy") and "%" in headline and "Δ +" in headline and " pp" in headline
    for figure in ("stages", "robustness"):
        svg = page.locator(f"#figure-{figure} svg")
        assert svg.count() == 1 and svg.bounding_box()["width"] > 500, figure
        html = svg.evaluate("e => e.outerHTML")
        for colour in (BASE_COLOUR, *(model_colour(pk) for pk in fine_tuned_ids)):   # every model, in its
            assert colour.lower() in html.lower(), (figure, colour)                       # colour, in both figures
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path="/tmp/finetune_compare.png", full_page=True)
    page.screenshot(path=str(SCREENSHOTS / "finetune_compare.png"), full_page=True)

    # narrow it to the base and one fine-tuned model with the form
    for name in ("tiny-ft-step-s1", "tiny-ft-answer-s0"):
        page.uncheck(f"#compare-models-choice input[value={name}]")
    page.click("#compare-form button[type=submit]")
    page.wait_for_selector("#compare-models")
    assert page.locator("#compare-models tbody tr").count() == 2
    assert page.locator("#compare-headline thead th").count() == 3
    assert page.locator("#compare-recipes").count() == 0              # one seed per recipe: nothing to average
    assert errors == []
