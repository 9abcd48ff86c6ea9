"""A curator opens the shortcut audit page in Debian chromium and sees the table and the plots."""
from __future__ import annotations

import pytest

from accounts.roles import Role

from ..e2e.test_pages_in_chromium import SCREENSHOTS, _login, browser  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_curator_opens_the_audit_and_sees_table_and_plots(browser, live_server, users, audit_items):  # noqa: F811
    from validity.services import shortcut_audit_run

    curator = users[Role.CURATOR]
    audit_items(80)
    audit = shortcut_audit_run(filters={}, split="test", actor=curator, params={"n_boot": 200})
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    _login(page, live_server.url, curator.username)
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
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "shortcut_audit.png"), full_page=True)
    page.click("#summary a[href*='image_necessary=yes']")
    assert "current versions matching" in page.locator("h1").inner_text()
