"""The chain page checks nothing by default ("Reject checked" is never one click from rejecting every
step), and a review with nothing checked changes nothing and says why."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import ImportBatch, QAItem, TaskCategory
from annotation.services.images import BytesSource, images_import
from annotation.services.qa import chain_create, qa_item_create
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain(curator):
    image = images_import(sources=[BytesSource("c.png", png_bytes())], actor=curator,
                          source=ImportBatch.Source.UPLOAD).images.get()
    chain = chain_create(image=image, actor=curator)
    for step in (1, 2, 3):
        qa_item_create(chain=chain, step=step, category=TaskCategory.objects.get(code="modality"),
                       question=f"Q{step}?", options=["CT", "MR"], gold_answer="CT", actor=curator)
    return chain


def test_no_step_is_checked_by_default(chain, curator):
    client = Client()
    client.force_login(curator)
    html = client.get(reverse("annotation:chain-detail", args=[chain.pk])).content.decode()
    boxes = re.findall(r'<input type="checkbox" name="ids"[^>]*>', html)
    assert len(boxes) == 3 and not any("checked" in b for b in boxes)
    assert "Reject checked" in html and "js/review_selection.js" in html


def test_rejecting_with_nothing_checked_changes_nothing_and_says_so(chain, curator):
    client = Client()
    client.force_login(curator)
    back = reverse("annotation:chain-detail", args=[chain.pk])
    response = client.post(reverse("annotation:item-review"), {"status": "rejected", "next": back}, follow=True)
    assert response.redirect_chain == [(back, 302)]
    assert "Nothing was checked, so nothing was approved or rejected: tick the items first." in \
        response.content.decode()
    assert set(QAItem.objects.values_list("status", flat=True)) == {"draft"}
