"""API, pages, roles and the /items/ image_necessary filter."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from validity.models import ShortcutAudit
from validity.services import shortcut_audit_run

pytestmark = pytest.mark.django_db


def _client(user):
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def done_audit(audit_items):
    audit_items(60)
    return shortcut_audit_run(filters={}, split="test", actor=None, params={"n_boot": 100})


def test_api_lists_and_shows_audits_with_results(done_audit, users):
    client = _client(users[Role.AUDITOR])
    page = client.get(reverse("validity:api-shortcut-audits")).json()
    assert page["count"] == 1 and page["results"][0]["seq"] == done_audit.seq and "results" not in page["results"][0]
    detail = client.get(reverse("validity:api-shortcut-audit", kwargs={"pk": done_audit.pk})).json()
    assert detail["status"] == "done"
    margin = next(c for c in detail["results"]["categories"] if c["key"] == "margin")
    assert margin["flag"] == "red" and margin["baselines"]["longest"]["accuracy"] == 1.0


def test_api_post_queues_an_audit_and_refuses_bad_input(audit_items, users):
    audit_items(5)
    client = _client(users[Role.CURATOR])
    response = client.post(reverse("validity:api-shortcut-audits"), {"category": ["margin"], "split": "test"},
                           content_type="application/json")
    assert response.status_code == 202 and response.json()["status"] == "pending"
    assert response.json()["filters"] == {"status": "approved", "category": ["margin"]}
    for body, message in (({"split": "holdout"}, "unknown split"), ({"status": "draft"}, "no current items match"),
                          ({"stage": "S9"}, "unknown stage")):
        bad = client.post(reverse("validity:api-shortcut-audits"), body, content_type="application/json")
        assert bad.status_code == 400 and bad.json()["code"] == "invalid" and message in bad.json()["detail"]
    assert ShortcutAudit.objects.count() == 1


def test_roles_read_and_run(done_audit, users):
    pk = {"pk": done_audit.pk}
    urls = [reverse("validity:shortcut-list"), reverse("validity:shortcut-detail", kwargs=pk),
            reverse("validity:api-shortcut-audits"), reverse("validity:api-shortcut-audit", kwargs=pk)]
    for role in Role:
        client = _client(users[role])
        for url in urls:
            expected = 200 if role in (Role.CURATOR, Role.AUDITOR, Role.ADMIN) else 403
            assert client.get(url).status_code == expected, (role, url)
        posted = client.post(reverse("validity:api-shortcut-audits"), {}, content_type="application/json")
        assert posted.status_code == (202 if role in (Role.CURATOR, Role.ADMIN) else 403), role


def test_detail_page_shows_tables_plots_and_flags(done_audit, users):
    url = reverse("validity:shortcut-detail", kwargs={"pk": done_audit.pk})
    html = _client(users[Role.CURATOR]).get(url).content.decode()
    assert html.count("<svg") >= 2 and 'aria-label="Gold answer distribution per category"' in html
    assert 'id="cat-margin"' in html and 'class="flag red"' in html
    assert "?image_necessary=yes" in html and "Longest option" in html


def test_page_form_starts_an_audit_and_shows_errors(audit_items, users):
    audit_items(5)
    client = _client(users[Role.CURATOR])
    form = {"status": "approved", "split": "test", "category": "margin"}
    response = client.post(reverse("validity:shortcut-create"), form)
    audit = ShortcutAudit.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("validity:shortcut-detail", kwargs={"pk": audit.pk})
    response = client.post(reverse("validity:shortcut-create"), {**form, "category": "nope"})
    assert response.status_code == 400 and "unknown category" in response.content.decode()
    assert ShortcutAudit.objects.count() == 1


def test_items_page_and_api_filter_on_image_necessary(done_audit, users):
    from annotation.models import QAItem

    client = _client(users[Role.CURATOR])
    necessary = QAItem.objects.filter(image_necessary=True).count()
    blind = QAItem.objects.filter(image_necessary=False).count()
    assert necessary and blind
    api = reverse("annotation:api-item-list")
    assert client.get(api, {"image_necessary": "yes"}).json()["count"] == necessary
    assert client.get(api, {"image_necessary": "no"}).json()["count"] == blind
    assert client.get(api, {"image_necessary": "unknown"}).json()["count"] == 60   # the box items
    first = client.get(api, {"image_necessary": "no"}).json()["results"][0]
    assert first["image_necessary"] is False
    page = client.get(reverse("annotation:item-list"), {"image_necessary": "yes"}).content.decode()
    assert f"{necessary} current versions matching" in page


def test_the_plots_are_drawn_once_per_result(done_audit, users, monkeypatch):
    from validity import charts

    drawn = []
    draw = charts.gold_distribution_svg
    monkeypatch.setattr(charts, "gold_distribution_svg", lambda cats: drawn.append(len(cats)) or draw(cats))
    url = reverse("validity:shortcut-detail", kwargs={"pk": done_audit.pk})
    pages = [_client(users[role]).get(url).content.decode() for role in (Role.CURATOR, Role.AUDITOR, Role.CURATOR)]
    plots = [re.findall(r'<figure class="chart-wrap".*?</figure>', page, re.S) for page in pages]
    assert len(drawn) == 1 and len(plots[0]) == 2 and plots[0] == plots[1] == plots[2]
    assert all('aria-label="Gold answer distribution per category"' in page for page in pages)
    # other results (another audit, or this one's changed) are drawn for themselves
    changed = [dict(cell, label=cell["label"] + " (2)") for cell in done_audit.results["categories"]]
    assert charts.audit_chart_svgs(changed)["gold_svg"] != charts.audit_chart_svgs(
        done_audit.results["categories"])["gold_svg"]
    assert len(drawn) == 2
