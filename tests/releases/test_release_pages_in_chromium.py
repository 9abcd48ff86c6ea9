"""An admin makes a release in Debian chromium: the list, the form, the detail page with its counts and
changelog; then a queued build whose progress line updates live (static/js/job_progress.js) and
whose page reloads when the build is done. Screenshots land in $MEDR2_SCREENSHOT_DIR."""
from __future__ import annotations

import pytest

from accounts.roles import Role
from releases.models import Release

from ..e2e.test_pages_in_chromium import SCREENSHOTS, _login, browser  # noqa: F401  (fixture)
from ..workers.conftest import eval_content  # noqa: F401  (fixture)
from .test_pages import sent, signing  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_creates_a_release_and_watches_its_build(browser, live_server, users, eval_content,  # noqa: F811
                                                       signing, sent):  # noqa: F811
    made = eval_content(images=2, kinds=["clean", "option_permutation"])
    admin = users[Role.ADMIN]
    page = browser.new_page(viewport={"width": 1360, "height": 1000})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, live_server.url, admin.username)

    page.click("header nav >> text=Releases")
    assert page.locator("h1").inner_text().startswith("Releases")
    assert "No releases yet" in page.locator("#release-table").inner_text()
    page.click("#new-release")
    page.fill("#id_title", "Browser release")
    page.fill("#id_description", "made in chromium")
    assert page.locator("select[name=stage] option").count() >= 5           # any + the four stages
    page.click("#release-form button[type=submit]")

    page.wait_for_selector("#counts")
    release = Release.objects.get()
    assert page.url.endswith(f"/releases/{release.pk}/")
    assert "created as a draft" in page.locator(".msg.success").inner_text()
    assert page.locator("h1").inner_text().startswith("med-r2 1.0.0")
    assert page.locator("h1 .status").inner_text() == "draft"
    assert page.locator("#totals .card .n").first.inner_text() == str(made["items"])
    for key in ("stage", "category", "modality", "split"):
        assert page.locator(f"#counts-{key} tbody tr").count() == len(release.counts[key]) >= 1
    assert page.locator("#changelog").is_visible() and "first release" in page.locator("#changelog-first").inner_text()
    assert page.locator("#reference-standard").is_visible()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "release_detail.png"), full_page=True)

    page.click("#build-form button[type=submit]")
    page.wait_for_selector("#release-progress")
    assert sent == [(release.pk, admin.pk)]                                   # queued for a worker, after commit
    assert page.locator("#release-progress-text").inner_text() == "queued"
    Release.objects.filter(pk=release.pk).update(progress={"step": "images", "done": 3, "total": 12})
    page.wait_for_function("() => document.getElementById('release-progress-text')"
                           ".textContent.startsWith('images: 3 / 12')",
                           timeout=6000)
    assert page.locator("#release-progress-bar").get_attribute("max") == "12"
    page.screenshot(path=str(SCREENSHOTS / "release_building.png"), full_page=True)

    Release.objects.filter(pk=release.pk).update(status=Release.Status.FAILED, error="image file missing: x.png")
    page.wait_for_selector("#build-error", timeout=6000)                     # the page reloaded by itself
    assert "image file missing" in page.locator("#build-error").inner_text()
    assert page.locator("#release-progress").count() == 0 and page.locator("#build-form").count() == 1
    assert errors == []
