"""Readers are blind on every page and every API response they can reach (tests/e2e/blinding.py), walked
over the same world of real objects as the every-page test."""
from __future__ import annotations

import pytest

from ..workers.conftest import tiny_vlm_dir  # noqa: F401  (fixture: the world's fine-tuning base model)
from .blinding import coverage_problems, leaks, reader_leaks
from .world import build_world, make_users


def test_every_api_route_is_walked_or_skipped_with_a_reason():
    assert coverage_problems() == []


def test_the_leak_rules_catch_names_run_ids_and_other_readers_boxes():
    import re
    names = [re.compile(r"(?<![\w-])cue-follower(?![\w-])", re.I)]
    other = {(24.0, 30.0, 94.0, 110.0)}
    assert leaks('{"models": ["Cue-Follower"]}', is_json=True, names=names, other_boxes=set())
    assert not leaks('{"models": ["Model A"], "hint": "a cue-followers study"}', is_json=True, names=names,
                     other_boxes=set())
    assert leaks('{"run_ids": [4]}', is_json=True, names=[], other_boxes=set())
    assert not leaks('{"run_ids": [], "raised_by": {"runs": [{"id": null}]}}', is_json=True, names=[],
                     other_boxes=set())
    assert leaks('<a href="/runs/4/">Run 4</a>', is_json=False, names=[], other_boxes=set())
    page = '<script type="application/json" id="v">{"layers": [{"boxes": [{"x0": 24, "y0": 30, "x1": 94, ' \
           '"y1": 110}]}]}</script>'
    assert leaks(page, is_json=False, names=[], other_boxes=other) == ["another reader's box (24.0, 30.0, 94.0, 110.0)"]


@pytest.mark.timeout(1200)
@pytest.mark.django_db(transaction=True)
def test_readers_see_no_model_name_run_or_other_readers_box_anywhere(make_user, monkeypatch, settings, tmp_path,
                                                                     tiny_vlm_dir):  # noqa: F811
    settings.MEDR2_RELEASE_ROOT = tmp_path / "releases"
    settings.MEDR2_FINETUNE_ROOT = tmp_path / "finetune"
    users = make_users(make_user)
    world = build_world(users=users, monkeypatch=monkeypatch, settings=settings, base_model_dir=tiny_vlm_dir)
    problems = reader_leaks(world=world, users=users)
    assert not problems, f"{len(problems)} leak(s):\n" + "\n".join(" | ".join(p) for p in problems[:80])
