"""The pages as a person sees them: Debian chromium driven by Playwright against a live server."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from accounts.roles import Role
from annotation.services.findings import finding_create
from annotation.services.images import BytesSource, images_import
from tests.conftest import png_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = Path(os.environ.get("MEDR2_SCREENSHOT_DIR", "/tmp/medr2-screenshots"))


@pytest.fixture
def browser():
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs an event loop in this thread
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def _login(page, base, username):
    page.goto(f"{base}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw-Secret-123")
    page.click("button[type=submit]")


def test_curator_browses_to_an_image_with_its_boxes(browser, live_server, users):
    curator = users[Role.CURATOR]
    batch = images_import(sources=[BytesSource("scan.png", png_bytes(size=(200, 100), color=60))], actor=curator)
    image = batch.images.get()
    finding_create(image=image, kind="lesion", label="nodule", actor=curator, source="manual", box=(20, 10, 70, 60))
    finding_create(image=image, kind="anatomy", label="liver", actor=curator, source="manual", box=(0, 0, 120, 100))

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _login(page, live_server.url, curator.username)
    assert page.locator("h1").inner_text() == "Dashboard"
    assert "1" in page.locator(".card .n").first.inner_text()

    page.click("text=Images")
    page.click(f"a.thumb[href='/images/{image.pk}/']")
    page.wait_for_selector("section.mv[data-mv-state=pixels] .mv-overlay rect.mv-box")
    rects = page.locator(".mv-overlay rect.mv-box")
    assert rects.count() == 2
    lesion = page.locator(".mv-overlay [data-layer=gold] rect.mv-box")      # the viewer (docs/viewer.md)
    assert [lesion.get_attribute(a) for a in ("data-x0", "data-y0", "data-x1", "data-y1")] == ["20", "10", "70", "60"]
    # the image itself loads (permission-checked file view)
    assert page.evaluate("() => new Promise(r => { const i = new Image(); i.onload = () => r(i.naturalWidth); "
                         f"i.onerror = () => r(-1); i.src = '/images/{image.pk}/file.png'; }})") == 200
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "image_detail.png"), full_page=True)


def test_annotator_sees_no_unassigned_images_and_no_audit_link(browser, live_server, users):
    images_import(sources=[BytesSource("scan.png", png_bytes(color=61))], actor=users[Role.CURATOR])
    page = browser.new_page()
    _login(page, live_server.url, users[Role.ANNOTATOR].username)
    assert page.locator("text=Audit trail").count() == 0
    page.goto(f"{live_server.url}/images/")
    assert page.locator("a.thumb").count() == 0
    assert "assigned to you" in page.content()
    response = page.goto(f"{live_server.url}/audit/")
    assert response.status == 403


def test_auditor_verifies_the_chain(browser, live_server, users):
    page = browser.new_page()
    _login(page, live_server.url, users[Role.AUDITOR].username)
    page.click("text=Audit trail")
    page.click("text=Verify chain")
    assert "Intact" in page.locator(".msg").inner_text()


def test_curator_reviews_a_chain_and_edits_a_step(browser, live_server, users, phantom_images):
    from annotation.models import Chain, QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate

    curator = users[Role.CURATOR]
    images = phantom_images(2)
    chains_generate(image_ids=[i.pk for i in images], actor=curator, seed=0)
    chain = Chain.objects.filter(image__findings__kind="lesion").distinct().first() or Chain.objects.first()
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    _login(page, live_server.url, curator.username)

    page.goto(f"{live_server.url}/chains/{chain.pk}/")
    steps = page.locator("li.step")
    assert steps.count() == chain.items.count() >= 2
    page.wait_for_selector("section.mv .mv-overlay rect.mv-box")  # the evidence boxes over the image
    assert page.locator("input.review-check:checked").count() == 0   # nothing is checked by default
    page.click("button[data-review=all]")
    page.click("button[value=approved]")
    assert "set to approved" in page.locator(".msg.success").inner_text()
    assert set(chain.items.values_list("status", flat=True)) == {"approved"}
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "chain_detail.png"), full_page=True)

    item = chain.items.filter(category__answer_type="single_choice").order_by("step").first()
    variants_generate(items=[item.pk], actor=None, seed=0)
    page.goto(f"{live_server.url}/items/{item.pk}/")
    assert page.locator("table >> text=Option permutation").count() >= 1
    page.click("text=Edit (new version)")
    page.fill("textarea[name=question]", "Reworded by the curator: " + item.question)
    page.fill("input[name=reason]", "clearer wording")
    page.click("form.form button[type=submit]")
    assert "Saved as version 2" in page.locator(".msg").inner_text()
    assert QAItem.objects.get(item_key=item.item_key, is_current=True).question.startswith("Reworded by the curator")
    assert page.locator("text=clearer wording").count() == 1


def test_run_page_updates_live_then_shows_the_leaderboard(browser, live_server, users, phantom_images):
    from django.utils import timezone

    from annotation.models import QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate
    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    images = phantom_images(2)
    chains_generate(image_ids=[i.pk for i in images], actor=None, seed=0)
    QAItem.objects.update(status=QAItem.Status.APPROVED)
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0,
                      kinds=["clean", "misleading_hint"])
    models = [endpoint_create(name="null-baseline", backend="null", actor=None),
              endpoint_create(name="random-baseline", backend="random", actor=None)]
    run = run_create(name="live", endpoints=models, actor=None, batch_size=5, split="all", start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status="running", started_at=timezone.now())
    batches = list(run.batches.order_by("pk").values_list("pk", flat=True))

    page = browser.new_page(viewport={"width": 1400, "height": 900})
    _login(page, live_server.url, users[Role.CURATOR].username)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    assert page.locator("#progress-text").inner_text().startswith(f"0 / {run.total}")
    for batch_id in batches[:2]:
        batch_execute(batch_id=batch_id)
    page.wait_for_function("() => document.querySelector('#progress-text').textContent.startsWith('10 /')",
                           timeout=15000)
    assert "predictions/s" in page.locator("#progress-rate").inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "run-in-progress.png"), full_page=True)

    for batch_id in batches[2:]:
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    page.wait_for_selector("text=Leaderboard", timeout=15000)  # the page reloads itself when scored
    assert page.locator("#run-status").inner_text().lower() == "completed"
    assert page.locator("table.leaderboard tbody tr").count() == 2
    assert page.locator("#stage-chart svg[aria-label^='Stage degradation']").count() == 1   # matplotlib, inline
    assert page.locator("#parse-methods tbody tr").count() == 2          # how each model's answers were read
    page.screenshot(path=str(SCREENSHOTS / "run-results.png"), full_page=True)


def test_curator_follows_a_batch_to_a_task_with_two_annotators(browser, live_server, users, settings):
    """Worklist -> batch (progress, agreement, 'open in Label Studio', sync log) -> task (each
    annotator's boxes in their own colour); the data is what a pull writes."""
    from labelstudio.models import AnnotationBatch, AnnotationTask, LabelStudioAnnotation, SyncLogEntry
    from labelstudio.services import batch_create, task_refresh_agreement

    settings.LABEL_STUDIO_URL = settings.LABEL_STUDIO_PUBLIC_URL = "http://ls.example:8080"
    curator, reader = users[Role.CURATOR], users[Role.ANNOTATOR]
    image = images_import(sources=[BytesSource("wide.png", png_bytes(size=(300, 217), color=70))],
                          actor=None).images.get()
    batch = batch_create(name="Chest batch", images=[image], readers=[reader, users[Role.ADJUDICATOR]],
                         maximum_annotations=2, actor=curator)
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=3, status="pushed")
    task = batch.tasks.get()
    AnnotationTask.objects.filter(pk=task.pk).update(ls_task_id=41)
    for n, (who, box) in enumerate([(reader, (20, 30, 90, 110)), (users[Role.ADJUDICATOR], (24, 30, 94, 110))]):
        LabelStudioAnnotation.objects.create(task=task, ls_annotation_id=100 + n, author=who, result=[],
                                             result_hash="h", ls_user_email=who.email)
        finding = finding_create(image=image, kind="lesion", label="nodule", actor=None, source="label_studio",
                                 box=box)
        finding.boxes.update(ls_annotation_id=str(100 + n), ls_result_id=f"r{n}", author=who)
    task.refresh_from_db()
    task_refresh_agreement(task)
    SyncLogEntry.objects.create(batch=batch, direction="pull", level="error", code="rotated",
                                message="result[2]: rotated boxes are not supported (rotation 30°)", ls_task_id=41)

    page = browser.new_page(viewport={"width": 1300, "height": 900})
    _login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/annotate/")
    page.click("text=Chest batch")
    assert page.locator("a:has-text('Open in Label Studio')").first.get_attribute("href") == \
        "http://ls.example:8080/projects/3/data?task=41"
    assert page.locator("#sync-log").inner_text().count("rotated") >= 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "annotation-batch.png"), full_page=True)
    page.click(f"a[href='/annotate/{batch.pk}/tasks/{task.pk}/']")
    page.wait_for_selector("section.mv .mv-overlay rect.mv-box")   # the shared viewer, one layer per reader
    assert page.locator("section.mv .mv-overlay rect.mv-box").count() == 2
    assert "Box F1 1.00" in page.inner_text("body")
    page.screenshot(path=str(SCREENSHOTS / "annotation-task.png"), full_page=True)
