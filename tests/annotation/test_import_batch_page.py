"""The import batch page lists its files a page at a time, filtered by outcome, with counts from the batch's
counters and a number of queries that does not grow with the batch."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import ImportBatch
from annotation.services.images import BytesSource, images_import
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


def _batch(rejected: int, colour: int = 10) -> ImportBatch:
    """Three images imported, one duplicate, then `rejected` files that are not images, in that order."""
    sources = [BytesSource(f"scan-{k}.png", png_bytes(color=colour + k)) for k in range(3)]
    sources.append(BytesSource("scan-again.png", png_bytes(color=colour)))
    sources += [BytesSource(f"junk-{k:03d}.bin", b"not an image %d" % k) for k in range(rejected)]
    batch = images_import(sources=sources, actor=None)
    batch.refresh_from_db()
    assert (batch.files_imported, batch.files_duplicate, batch.files_failed) == (3, 1, rejected)
    return batch


def _names(html: str) -> list[str]:
    return re.findall(r'<td class="mono">([^<]+)</td>', html)


@pytest.fixture
def client(curator):
    client = Client()
    client.force_login(curator)
    return client


def _get(client, batch, **params) -> str:
    response = client.get(reverse("annotation:import-batch", args=[batch.pk]), params)
    assert response.status_code == 200
    return response.content.decode()


def test_the_batch_page_shows_its_files_a_page_at_a_time(client):
    batch = _batch(rejected=56)                       # 60 files: 50 on page 1, 10 on page 2
    first, second = _get(client, batch), _get(client, batch, page=2)
    assert "60 reported" in first and "page 1 of 2" in first and "?page=2" in first
    assert _names(first)[:4] == ["scan-0.png", "scan-1.png", "scan-2.png", "scan-again.png"]
    assert len(_names(first)) == 50 and len(_names(second)) == 10 and "page 2 of 2" in second
    assert _names(first) + _names(second) == ["scan-0.png", "scan-1.png", "scan-2.png", "scan-again.png",
                                              *[f"junk-{k:03d}.bin" for k in range(56)]]
    assert _names(_get(client, batch, page=99)) == _names(second)       # past the end: the last page
    assert _names(_get(client, batch, page="x")) == _names(first)       # junk: the first


def test_the_outcome_filter_keeps_one_outcome_and_pages_within_it(client):
    batch = _batch(rejected=56)
    rejected = _get(client, batch, status="failed")
    assert "56 rejected" in rejected and "page 1 of 2" in rejected
    assert "?status=failed&amp;page=2" in rejected                       # the pager keeps the filter
    on_two = _names(_get(client, batch, status="failed", page=2))
    assert on_two == [f"junk-{k:03d}.bin" for k in range(50, 56)]
    imported = _get(client, batch, status="imported")
    assert _names(imported) == ["scan-0.png", "scan-1.png", "scan-2.png"] and "page 1 of" not in imported
    assert _names(_get(client, batch, status="duplicate")) == ["scan-again.png"]
    assert len(_names(_get(client, batch, status="nonsense"))) == 50    # an unknown outcome: every file
    links = re.search(r'<p class="small" id="file-filter">(.*?)</p>', imported, re.S).group(1)
    assert "<strong>imported</strong> (3)" in links and ">rejected</a> (56)" in links and "(60)" in links


def test_the_batch_page_costs_as_many_queries_for_a_large_batch_as_for_a_small_one(client):
    small, large = _batch(rejected=2), _batch(rejected=130, colour=50)

    def queries(batch, **params) -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            _get(client, batch, **params)
        return [q["sql"] for q in captured]

    counts = {len(queries(batch, **params)) for batch, params in [
        (small, {}), (large, {}), (large, {"page": 3}), (large, {"status": "failed", "page": 2})]}
    assert len(counts) == 1
    files = [sql for sql in queries(large, page=2) if "annotation_importfileresult" in sql]
    assert len(files) == 2 and not any("COUNT(" in sql for sql in files)   # the page's ids, then its rows
