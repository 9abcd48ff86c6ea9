"""The case page's viewer (adjudication/viewer.py): model layers named and coloured as the reader may
see them — blinded letters take their position's colour, named models their own — the case's own
image URLs, and the page's keys left to the page."""
from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from common import palette

from .test_facts import scored  # noqa: F401  (fixture)
from .test_verdicts import consensus_case  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _config(user, case) -> dict:
    c = Client()
    c.force_login(user)
    html = c.get(reverse("adjudication:case-detail", args=[case.pk])).content.decode()
    start = html.index(">", html.index('<script id="mv-')) + 1
    return json.loads(html[start:html.index("</script>", start)])


def _models(cfg) -> list[tuple[str, str]]:
    return [(lay["name"], lay["colour"]) for lay in cfg["layers"] if lay["kind"] == "model"]


def test_adjudicators_see_letters_coloured_by_position_and_curators_named_models(consensus_case, users):  # noqa: F811
    case, endpoints = consensus_case["case"], consensus_case["endpoints"]
    blind = _config(users[Role.ADJUDICATOR], case)
    assert _models(blind) == [(f"Model {letter}", colour) for letter, colour in zip("ABC", palette.MODEL_COLOURS)]
    assert "model-a" not in json.dumps(blind)
    named = _config(users[Role.CURATOR], case)
    by_id = sorted(endpoints, key=lambda e: e.pk)
    assert _models(named) == [(e.label, palette.model_colour(e.pk)) for e in by_id]
    slice_ = blind["series"]["slices"][0]
    assert slice_["png"] == reverse("adjudication:case-image", args=[case.pk])
    assert slice_["pixels"] == reverse("adjudication:case-pixels", args=[case.pk])
    assert {"c", "e", "a", "f", "enter"} <= {code for k in blind["page_keys"] for code in k["codes"]}
    assert not blind["draw"], "a single-choice item has no box to redraw"
    gold, anatomy = blind["layers"][:2]
    assert (gold["colour"], anatomy["colour"], anatomy["visible"]) == (palette.GOLD, palette.ANATOMY, False)


def test_the_draw_tool_is_on_for_a_reader_of_a_box_item(scored, users):  # noqa: F811
    from adjudication.models import AdjudicationCase
    from annotation.models import QAItem

    item = QAItem.objects.filter(category__answer_type="box", is_current=True).order_by("pk").first()
    case = AdjudicationCase.objects.create(
        key=f"item:{item.item_key}", item=item, item_key=item.item_key, image=item.chain.image, stage=item.stage,
        category=item.category, rules=",right_answer_wrong_evidence,", hits=[], priority=0.9)
    cfg = _config(users[Role.ADJUDICATOR], case)
    assert cfg["draw"] and cfg["layers"][-1]["key"] == "drawn"
    assert any(b["label"].startswith("gold answer") for b in cfg["layers"][0]["boxes"])
    assert not _config(users[Role.AUDITOR], case)["draw"], "who may not read gets no draw tool"
