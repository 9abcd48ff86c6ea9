"""Every app's pages light up their own entry in the navigation bar (templates/base.html reads the
route's namespace, so a renamed route cannot silently lose its highlight)."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role

# page → the navigation label that must be the (only) active one
PAGES = [
    ("dashboard:index", "Dashboard"),
    ("annotation:image-list", "Images"),
    ("annotation:item-list", "QA items"),
    ("annotation:category-list", "Taxonomy"),
    ("annotation:image-import", "Import"),
    ("labelstudio:worklist", "Annotation"),
    ("adjudication:queue", "Adjudication"),
    ("adjudication:agreement", "Adjudication"),
    ("workers:run-list", "Runs"),
    ("workers:model-list", "Models"),
    ("validity:shortcut-list", "Validity"),
    ("audit:event-list", "Audit trail"),
    ("audit:verify", "Audit trail"),
    ("releases:release-list", "Releases"),
    ("releases:release-create", "Releases"),
    ("reports:report-list", "Reports"),
    ("reports:report-create", "Reports"),
]


@pytest.mark.parametrize("route,label", PAGES, ids=[p[0] for p in PAGES])
def test_each_page_highlights_its_own_navigation_entry(route, label, make_user):
    client = Client()
    client.force_login(make_user(Role.ADMIN))
    html = client.get(reverse(route)).content.decode()
    active = re.findall(r'class="active">([^<]+)</a>', html)
    assert active == [label]
