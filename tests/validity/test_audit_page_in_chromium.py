"""A curator opens the shortcut audit page in Debian chromium and sees the table and the plots."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from accounts.roles import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


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


def test_curator_opens_the_audit_and_sees_table_and_plots(browser, live_server, users, audit_items):
    from validity.services import shortcut_audit_run

    curator = users[Role.CURATOR]
    audit_items(80)
    audit = shortcut_audit_run(filters={}, split="test", actor=curator, params={"n_boot": 200})
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", curator.username)
    page.fill("#id_password", "pw-Secret-123")
    page.click("button[type=submit]")
    page.click("text=Validity")
    assert page.locator("#audit-form button[type=submit]").count() == 1          # curators may start one
    page.click(f"a[href='/validity/shortcuts/{audit.pk}/']")
    page.wait_for_selector("#category-table")
    assert page.locator("#cat-margin .flag.red").count() == 1
    assert page.locator("#category-table tbody tr").count() == 3
    assert page.locator("#plot-gold svg").count() == 1 and page.locator("#plot-accuracy svg").count() == 1
    box = page.locator("#plot-accuracy svg").bounding_box()
    assert box["width"] > 200 and box["height"] > 50                             # the SVG is drawn, not empty
    assert "image_necessary=yes" in page.locator("#summary").inner_html()
    shots = os.environ.get("MEDR2_SCREENSHOT_DIR")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / "shortcut_audit.png"), full_page=True)
    page.click("#summary a[href*='image_necessary=yes']")
    assert "current versions matching" in page.locator("h1").inner_text()
