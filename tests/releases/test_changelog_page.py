"""The release page reads its changelog in the database, a page at a time (a release at the paper's scale
holds 100k entries, megabytes of JSON): the summary, every page and every kind filter show what the whole
stored list says; no page query loads the list; the query count does not grow with it. Lists and the rows
that only name a release leave its heavy JSON unread; the form's modality and dataset choices are those of
the current items."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.roles import Role
from annotation.models import Image, QAItem
from releases import selectors
from releases.models import Release
from releases.services import release_create

from ..workers.conftest import eval_content  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db
PER_PAGE = 50
CHANGES_COLUMN = '"releases_release"."changes"'   # how the ORM names the column when it loads it


@pytest.fixture
def release(eval_content, users):  # noqa: F811
    eval_content(images=2, kinds=["clean"])
    return release_create(actor=users[Role.ADMIN], version="1.0.0")


def changelog(n: int) -> list[dict]:
    """A changelog of every kind, interleaved as item keys sort them, with and without a new gold."""
    out = []
    for i in range(n):
        kind = ("added", "changed", "removed", "changed", "added", "added")[i % 6]
        entry = {"kind": kind, "item_key": f"key-{i:05}", "from_version": None if kind == "added" else 1,
                 "to_version": None if kind == "removed" else 2, "reason": f"reason {i}"}
        if kind == "changed":
            entry["gold_changed"] = i % 4 == 1
        out.append(entry)
    return out


def with_changelog(release: Release, changes: list[dict]) -> Release:
    """The release with this changelog against a previous release (written directly: no service makes it)."""
    previous = Release.objects.create(version=f"0.{Release.objects.count()}.0", created_date="2026-01-01")
    Release.objects.filter(pk=release.pk).update(changes=changes, previous=previous)
    return selectors.release_get(pk=release.pk)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def shown_keys(html: str) -> list[str]:
    table = re.search(r'id="changes">.*?</table>', html, re.S).group(0)
    return re.findall(r"<code>(key-\d+)</code>", table)


def test_every_page_of_every_kind_shows_the_stored_list_in_its_order(release, users):
    changes = changelog(230)
    with_changelog(release, changes)
    client = client_for(users[Role.CURATOR])
    url = reverse("releases:release-detail", kwargs={"pk": release.pk})
    summary = selectors.change_summary_of(changes)
    assert summary == {"added": 115, "removed": 38, "changed": 77, "gold_changed": 39, "total": 230}
    html = client.get(url).content.decode()
    assert "115 added · 38 removed · 77 changed (39 with a new gold)" in " ".join(html.split())
    for kind in ("", "added", "removed", "changed"):
        expected = [c["item_key"] for c in changes if not kind or c["kind"] == kind]
        pages = -(-len(expected) // PER_PAGE)
        for number in range(1, pages + 2):    # and one past the end: the last page again
            html = client.get(url, {"kind": kind, "changes": number}).content.decode()
            shown = min(number, pages)
            assert shown_keys(html) == expected[(shown - 1) * PER_PAGE:shown * PER_PAGE], (kind, number)
            assert (f"page {shown} of {pages}" in html) == (pages > 1)
    gold = client.get(url, {"kind": "changed"}).content.decode()
    first_changed = [c for c in changes if c["kind"] == "changed"][:PER_PAGE]
    assert gold.count("gold changed</span>") == sum(1 for c in first_changed if c["gold_changed"]) > 0


def test_the_rows_read_in_the_database_are_the_stored_entries(release):
    changes = changelog(130)
    release = with_changelog(release, changes)
    summary = selectors.release_change_summary(release=release)
    assert summary == selectors.change_summary_of(changes)
    for kind in ("", "added", "removed", "changed"):
        rows = selectors.release_change_rows(release=release, summary=summary, kind=kind)
        expected = [c for c in changes if not kind or c["kind"] == kind]
        assert rows.count() == len(rows) == len(expected)
        for start, stop in ((0, 50), (50, 100), (40, 45), (len(expected) - 3, len(expected) + 10), (5, 5)):
            assert rows[start:stop] == expected[start:stop], (kind, start, stop)
    assert selectors.release_change_rows(release=release, summary=summary, kind="unknown")[0:50] == []


def test_a_kind_that_is_every_entry_or_none_reads_by_position(release):
    changes = [c for c in changelog(120) if c["kind"] == "added"]
    release = with_changelog(release, changes)
    summary = selectors.release_change_summary(release=release)
    added = selectors.release_change_rows(release=release, summary=summary, kind="added")
    assert added.kind == "" and added[10:20] == changes[10:20]
    with CaptureQueriesContext(connection) as queries:
        assert selectors.release_change_rows(release=release, summary=summary, kind="removed")[0:50] == []
    assert len(queries) == 0


def test_a_release_made_by_the_service_shows_the_counts_recorded_with_its_changelog(release, users):
    first = QAItem.objects.filter(is_current=True).order_by("pk")
    QAItem.objects.filter(pk=first[0].pk).update(status=QAItem.Status.REJECTED)
    second = release_create(actor=users[Role.ADMIN])
    full = Release.objects.get(pk=second.pk)
    expected = selectors.change_summary_of(full.changes)
    assert expected["removed"] == 1 and expected["total"] == len(full.changes)
    page_release = selectors.release_get(pk=second.pk)
    assert "changes" in page_release.get_deferred_fields()
    with CaptureQueriesContext(connection) as queries:
        assert selectors.release_change_summary(release=page_release) == expected
    assert len(queries) == 1 and "audit_auditevent" in queries[0]["sql"]     # the record, not the list
    assert selectors.release_change_summary(release=selectors.release_get(pk=release.pk)) == \
        selectors.change_summary_of([])                                          # a first release: none


def test_the_page_never_loads_the_changelog_and_its_query_count_does_not_grow(release, users):
    client = client_for(users[Role.AUDITOR])
    url = reverse("releases:release-detail", kwargs={"pk": release.pk})
    counts = {}
    for n in (60, 3000):
        with_changelog(release, changelog(n))
        for query in ({}, {"kind": "changed", "changes": 2}):
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url, query)
            assert response.status_code == 200 and shown_keys(response.content.decode())
            assert not [q["sql"] for q in queries if CHANGES_COLUMN in q["sql"]]
            counts[n, bool(query)] = len(queries)
    assert counts[60, False] == counts[3000, False] and counts[60, True] == counts[3000, True]


def test_lists_and_choices_leave_the_heavy_json_unread(release):
    with_changelog(release, changelog(10))
    heavy = set(selectors.HEAVY_FIELDS)
    for row in [*selectors.release_summaries(), *selectors.release_rows()]:
        assert heavy <= row.get_deferred_fields()
    assert selectors.heavy_fields("release__") == tuple(f"release__{f}" for f in selectors.HEAVY_FIELDS)
    assert selectors.release_get(pk=release.pk).get_deferred_fields() == {"changes"}
    assert selectors.release_get(pk=release.pk, with_changes=True).get_deferred_fields() == set()
    assert selectors.release_latest().pk == release.pk      # 1.0.0 > the 0.1.0 made above


def test_the_form_offers_the_modalities_and_datasets_of_current_items(eval_content):  # noqa: F811
    content = eval_content(images=3, kinds=["clean"])
    one, other, third = content["images"]
    Image.objects.filter(pk=one.pk).update(modality="XA", source_dataset="old archive")
    Image.objects.filter(pk=other.pk).update(modality="", source_dataset="")
    Image.objects.filter(pk=third.pk).update(modality="US")
    # the XA image's items are old versions only: a release cannot hold them
    QAItem.objects.filter(chain__image=one).update(is_current=False)
    Image.objects.create(sha256="0" * 64, file="x.png", width=1, height=1, source_format="png", modality="MG",
                         source_dataset="unused")
    current = QAItem.objects.filter(is_current=True).order_by()

    def reference(field: str) -> list[tuple[str, str]]:    # what the form offered before: a DISTINCT over items
        return [(v, v) for v in current.values_list(field, flat=True).distinct().order_by(field) if v]

    choices = selectors.release_filter_choices()
    assert choices["modality"] == reference("chain__image__modality") == [("US", "US")]
    assert choices["source_dataset"] == reference("chain__image__source_dataset")
    assert "old archive" not in dict(choices["source_dataset"]) and choices["source_dataset"]
