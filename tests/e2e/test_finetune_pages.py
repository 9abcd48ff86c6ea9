"""A curator queues a fine-tuning job in Debian chromium and watches it train: the list, the form, the job page
whose progress bar, live numbers and loss curve (static/js/finetune.js) follow the progress the worker writes
(set here in the database: nothing trains), and the page that reloads with the result once the job is done.
Screenshots: /tmp/finetune_job.png (training) and /tmp/finetune_job_done.png."""
from __future__ import annotations

import pytest

from accounts.roles import Role
from finetune.models import FineTuneJob
from tests.e2e.test_pages_in_chromium import _login, browser  # noqa: F401 - fixture
from tests.finetune.conftest import base_model  # noqa: F401 - fixture
from tests.finetune.test_pages import complete, items_in, queued  # noqa: F401 - fixtures
from tests.workers.conftest import make_endpoint, tiny_vlm_dir  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def curve(steps: int) -> list[dict]:
    """A falling train loss at every step and a val loss every 5 steps."""
    return [{"step": s, "loss": round(2.6 * 0.93 ** s + 0.4, 4),
             **({"val_loss": round(2.7 * 0.94 ** s + 0.55, 4)} if s % 5 == 0 else {})} for s in range(1, steps + 1)]


def progress(steps: int, budget: int = 60) -> dict:
    last = curve(steps)[-1]
    return {"step": steps, "steps": budget, "loss": last["loss"], "val_loss": curve(steps - steps % 5)[-1]["val_loss"],
            "tokens": steps * 2100, "tokens_per_s": 1830.5, "eta_s": (budget - steps) * 2.0,
            "peak_rss_bytes": 2_400_000_000, "history": curve(steps)}


def test_curator_queues_a_job_and_watches_it_train(browser, live_server, users, items_in, base_model,  # noqa: F811
                                                   queued, make_endpoint):  # noqa: F811
    items_in("train")
    curator = users[Role.CURATOR]
    page = browser.new_page(viewport={"width": 1360, "height": 1000})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, live_server.url, curator.username)

    page.click("header nav >> text=Fine-tuning")
    assert page.locator("h1").inner_text().startswith("Fine-tuning jobs")
    assert "No fine-tuning jobs" in page.locator("#job-list").inner_text()
    page.click("text=New job")
    page.select_option("#id_base_endpoint", str(base_model.pk))
    page.check("input[name=stage][value=S1]")
    page.check("input[name=stage][value=S2]")
    page.select_option("#id_recipe", "stepwise")
    page.fill("#id_steps", "60")
    page.fill("#id_seed", "1")
    page.screenshot(path="/tmp/finetune_form.png", full_page=True)
    page.click("#job-form button[type=submit]")

    page.wait_for_selector("#ft-curve")
    job = FineTuneJob.objects.get()
    assert page.url.endswith(f"/finetune/{job.pk}/")
    assert queued == [("finetune.train", job.pk)]
    assert page.locator("#ft-status").inner_text() == "Pending"
    assert page.locator("#ft-curve-empty").count() == 1                 # no step yet
    assert page.locator("#ft-bar").get_attribute("max") == "60"

    FineTuneJob.objects.filter(pk=job.pk).update(status="running", progress=progress(12))
    page.wait_for_function("() => document.querySelectorAll('#ft-curve circle.val').length === 2", timeout=8000)
    assert len(page.locator("#ft-train").get_attribute("points").split()) == 12
    assert page.locator("#ft-status").inner_text() == "Running"
    assert page.locator("#ft-step-text").inner_text() == "step 12 / 60 (20%)"
    assert page.evaluate("document.getElementById('ft-bar').value") == 12
    assert page.locator("[data-stat=eta]").inner_text() == "1 min 36 s"
    first = page.locator("#ft-train").get_attribute("points")

    FineTuneJob.objects.filter(pk=job.pk).update(progress=progress(37))
    page.wait_for_function("() => document.querySelectorAll('#ft-curve circle.val').length === 7", timeout=8000)
    assert len(page.locator("#ft-train").get_attribute("points").split()) == 37
    assert page.locator("#ft-train").get_attribute("points") != first
    best = min((p for p in curve(37) if "val_loss" in p), key=lambda p: p["val_loss"])
    assert f"at step {best['step']}" in page.locator("#ft-best title").text_content()   # the weights kept
    assert page.locator("[data-stat=loss]").inner_text() == f"{curve(37)[-1]['loss']:.4f}"
    assert page.locator("[data-stat=rate]").inner_text() == "1,831 tokens/s"
    assert page.locator("[data-stat=eta]").inner_text() == "46 s"
    assert page.locator("[data-stat=memory]").inner_text() == "2.2 GB"
    assert page.locator("#cancel-form").is_visible()
    page.screenshot(path="/tmp/finetune_job.png", full_page=True)

    tuned = make_endpoint("tiny-base-ft-stepwise-s1", "transformers", parameters={"path": "/m", "adapter": "/m/a"},
                          display_name="tiny-base + stepwise (seed 1)")
    from workers.models import EvaluationRun

    run = EvaluationRun.objects.create(name=f"{job.name}: base vs fine-tuned", split="test")
    complete(job, run=run, endpoint=tuned)
    FineTuneJob.objects.filter(pk=job.pk).update(progress={**progress(40), "eta_s": 0})
    page.wait_for_selector("#ft-result", timeout=8000)                  # reloaded by itself when done
    assert page.locator("#ft-status").inner_text() == "Completed"
    assert page.locator("#ft-compare").get_attribute("href") == f"/finetune/compare/?run={run.pk}"
    assert page.locator("#cancel-form").count() == 0
    polls = page.evaluate("document.getElementById('ft-progress').dataset.polls || '0'")
    page.wait_for_timeout(2500)
    assert page.evaluate("document.getElementById('ft-progress').dataset.polls || '0'") == polls == "0"  # stopped
    page.screenshot(path="/tmp/finetune_job_done.png", full_page=True)
    page.click("text=all jobs")
    row = page.locator("#job-list tbody tr").first
    assert f"#{job.pk}" in row.inner_text() and "Completed" in row.inner_text() and f"run #{run.pk}" in row.inner_text()
    page.screenshot(path="/tmp/finetune_list.png", full_page=True)
    assert errors == []
