"""Fixtures shared by the browser tests of tests/e2e (the `browser` fixture itself lives in
test_pages_in_chromium.py, which the other browser tests import it from)."""
from __future__ import annotations

import pytest

from accounts.roles import Role

from .test_pages_in_chromium import _login


@pytest.fixture
def page_for(browser, live_server, users):
    """A logged-in page (curator by default) that records console errors; each test asserts none."""
    pages = []

    def _open(role=Role.CURATOR):
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.errors = []
        page.on("console", lambda m: m.type == "error" and not m.location.get("url", "").endswith("/favicon.ico")
                and page.errors.append(m.text))
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        _login(page, live_server.url, users[role].username)
        pages.append(page)
        return page

    yield _open
    for page in pages:
        assert page.errors == [], f"console errors: {page.errors}"
