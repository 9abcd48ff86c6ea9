"""The start page's counts scan every current QA item, so they are kept a minute (annotation/selectors.py,
`dashboard_counts`): users who see every image share one entry, each reader has their own, an assignment
shows at once, and everything is counted again after a minute."""
from __future__ import annotations

import re

import pytest
from django.core.cache.backends import locmem
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.roles import Role
from annotation.models import Finding, ImportBatch
from annotation.selectors import DASHBOARD_COUNTS_TTL, dashboard_counts, image_filter_choices
from annotation.services.images import BytesSource, image_assign, image_unassign, images_import
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


def _import(curator, n: int, first: int = 0, modality: str = "") -> list:
    batch = images_import(sources=[BytesSource(f"c{first + k}.png", png_bytes(color=10 + first + k))
                                   for k in range(n)], actor=curator, source=ImportBatch.Source.UPLOAD)
    images = list(batch.images.order_by("pk"))
    if modality:
        for image in images:
            image.modality = modality
            image.save(update_fields=["modality"])
    return images


def _images_card(html: str) -> str:
    """The number on the images card."""
    return re.search(r'<div class="n">([\d,]+)</div><div class="l">images', html).group(1)


def _dashboard(user) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("dashboard:index"))
    assert response.status_code == 200
    return response.content.decode()


class _Later:
    """`time` as the local-memory cache sees it, `seconds` from now."""

    def __init__(self, seconds: float):
        import time
        self._time, self.seconds = time, seconds

    def time(self) -> float:
        return self._time.time() + self.seconds


def test_a_reader_never_gets_the_counts_of_another_scope(users, curator):
    images = _import(curator, 4)
    Finding.objects.create(image=images[3], kind=Finding.Kind.LESION, label="nodule", source=Finding.Source.MANUAL)
    first, second = users[Role.ANNOTATOR], users[Role.ADJUDICATOR]
    # the curator counts first: every image, cached for everyone who sees every image
    assert dashboard_counts(user=curator)["n_images"] == 4 and _images_card(_dashboard(curator)) == "4"
    image_assign(images=images[:1], user=first, actor=curator)
    image_assign(images=images[1:4], user=second, actor=curator)
    assert dashboard_counts(user=first)["n_images"] == 1 and dashboard_counts(user=first)["n_findings"] == 0
    assert dashboard_counts(user=second)["n_images"] == 3 and dashboard_counts(user=second)["n_findings"] == 1
    assert _images_card(_dashboard(first)) == "1" and _images_card(_dashboard(second)) == "3"
    assert "1 image assigned to you" in _dashboard(first)
    # the auditor shares the curator's entry; a user with no role sees no image and caches nothing
    assert dashboard_counts(user=users[Role.AUDITOR])["n_images"] == 4
    assert dashboard_counts(user=users[None])["n_images"] == 0


def test_an_assignment_changes_a_readers_counts_at_once(users, curator):
    images = _import(curator, 3)
    reader = users[Role.ADJUDICATOR]
    assert dashboard_counts(user=reader)["n_images"] == 0
    image_assign(images=images[:1], user=reader, actor=curator)
    assert dashboard_counts(user=reader)["n_images"] == 1
    image_assign(images=images[1:], user=reader, actor=curator)
    assert dashboard_counts(user=reader)["n_images"] == 3
    image_unassign(images=images[:1], user=reader, actor=curator)
    assert dashboard_counts(user=reader)["n_images"] == 2


def test_counts_are_kept_a_minute_then_counted_again(users, curator, monkeypatch):
    _import(curator, 2)
    counted = dashboard_counts(user=curator)
    assert counted["n_images"] == 2
    _import(curator, 1, first=5)
    # within the minute: the same counts, and the page says when they were counted
    assert dashboard_counts(user=curator) == counted
    assert 'id="counts-age"' in _dashboard(curator) and "recounted at most once a minute" in _dashboard(curator)
    with CaptureQueriesContext(connection) as kept:
        dashboard_counts(user=curator)
    assert not any("annotation_qaitem" in q["sql"] for q in kept.captured_queries)
    monkeypatch.setattr(locmem, "time", _Later(DASHBOARD_COUNTS_TTL + 1))
    assert dashboard_counts(user=curator)["n_images"] == 3


def test_qa_counts_by_stage_and_status_match_a_plain_count(users, curator):
    from annotation.models import QAItem, TaskCategory
    from annotation.services.qa import chain_create, qa_item_create, qa_items_review

    image = _import(curator, 1)[0]
    chain = chain_create(image=image, actor=curator)
    category = TaskCategory.objects.get(code="modality")
    items = [qa_item_create(chain=chain, step=n, category=category, question=f"Q{n}", options=["CT", "MR"],
                            gold_answer="CT", actor=curator) for n in range(1, 4)]
    qa_items_review(item_ids=[items[0].pk], status=QAItem.Status.APPROVED, actor=curator)
    counts = dashboard_counts(user=curator)
    current = QAItem.objects.filter(is_current=True)
    assert counts["n_items"] == current.count() == 3
    assert counts["by_status"] == {s.value: current.filter(status=s).count() for s in QAItem.Status}
    row = next(r for r in counts["by_stage"] if r["stage"].pk == category.stage_id)
    assert (row["total"], row["draft"], row["approved"]) == (3, 2, 1)
    assert all(r["total"] == 0 for r in counts["by_stage"] if r["stage"].pk != category.stage_id)


def test_image_filter_choices_are_kept_per_scope_and_newest_image(users, curator):
    ct, mr = _import(curator, 1, modality="CT"), _import(curator, 1, first=3, modality="MR")
    reader = users[Role.ANNOTATOR]
    assert image_filter_choices(user=curator)["modality"] == ["CT", "MR"]
    assert image_filter_choices(user=reader)["modality"] == []
    image_assign(images=mr, user=reader, actor=curator)
    assert image_filter_choices(user=reader)["modality"] == ["MR"]
    assert image_filter_choices(user=users[Role.AUDITOR])["modality"] == ["CT", "MR"]
    assert ct and image_filter_choices(user=users[None]) == {"modality": [], "body_region": [], "source_format": []}
    with CaptureQueriesContext(connection) as kept:
        assert image_filter_choices(user=curator)["modality"] == ["CT", "MR"]
    assert not any("DISTINCT" in q["sql"] for q in kept.captured_queries)
    # an import's images can be filtered (and assigned) by their values at once
    _import(curator, 1, first=6, modality="US")
    assert image_filter_choices(user=curator)["modality"] == ["CT", "MR", "US"]


def test_the_start_page_loads_no_release_change_list(users, curator):
    from django.utils import timezone

    from releases.models import Release

    Release.objects.create(version="1.0.0", status="built", created_date=timezone.now().date())
    Release.objects.create(version="0.9.0", status="published", created_date=timezone.now().date(),
                           published_at=timezone.now())
    for user in (curator, users[Role.ADMIN]):
        with CaptureQueriesContext(connection) as ctx:
            html = _dashboard(user)
        releases = [q["sql"] for q in ctx.captured_queries if 'FROM "releases_release"' in q["sql"]]
        assert releases and not any('"changes"' in sql or '"selection"' in sql for sql in releases)
        assert "Release 1.0.0" in html


def test_a_readers_box_count_leaves_out_another_readers_label_studio_boxes(users, curator, make_user):
    from annotation.services.findings import finding_create

    image = _import(curator, 1)[0]
    reader, other = users[Role.ADJUDICATOR], make_user(Role.ADJUDICATOR)
    image_assign(images=[image], user=reader, actor=curator)
    mine = finding_create(image=image, kind="lesion", label="cyst", actor=curator, source="manual", box=(1, 1, 5, 5))
    theirs = finding_create(image=image, kind="lesion", label="mass", actor=curator, source="manual", box=(2, 2, 9, 9))
    mine.boxes.update(ls_annotation_id="101", author=reader)
    theirs.boxes.update(ls_annotation_id="102", author=other)
    assert dashboard_counts(user=curator)["n_boxes"] == 2
    assert dashboard_counts(user=reader)["n_boxes"] == 1
