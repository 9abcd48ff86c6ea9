"""Creating releases: what is in, what is left out and why, the changelog, and the semver rule."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from accounts.roles import Role
from adjudication.models import AdjudicationCase
from annotation.models import QAItem
from annotation.services.qa import qa_item_revise, qa_items_review
from audit.models import AuditEvent
from releases.models import Release
from releases.selectors import release_diff
from releases.services import release_create, release_publish

from ..workers.conftest import eval_content  # noqa: F401  (fixture)


@pytest.fixture
def admin(make_user):
    return make_user(Role.ADMIN)


@pytest.fixture
def content(eval_content):  # noqa: F811
    return eval_content(images=3, kinds=["misleading_hint", "option_permutation"])


def _current():
    return QAItem.objects.filter(is_current=True).order_by("pk")


def test_a_release_freezes_the_current_approved_items_with_their_variants_and_splits(content, admin):
    release = release_create(actor=admin)
    assert release.version == "1.0.0" and release.status == Release.Status.DRAFT and release.bump == "major"
    frozen = release.items.all()
    assert frozen.count() == _current().count() == release.counts["items"]
    first = frozen.first()
    assert first.variant_ids and first.split in ("train", "val", "test")
    assert first.item_version == first.item.version and len(first.gold_hash) == 64
    assert sum(release.counts["split"].values()) == frozen.count()
    created = AuditEvent.objects.get(action="releases.release.create", object_id=str(release.pk))
    assert release.audit_head == AuditEvent.objects.get(seq=created.seq - 1).hash   # the head before it
    assert release.taxonomy and len(release.taxonomy_version) == 64
    assert AuditEvent.objects.filter(action="releases.release.create", object_id=str(release.pk)).exists()


def test_rejected_ambiguous_unreviewed_and_open_case_items_are_left_out_and_reported(content, admin):
    items = list(_current())
    qa_items_review(item_ids=[items[0].pk], status="rejected", actor=admin)
    QAItem.objects.filter(pk=items[1].pk).update(status=QAItem.Status.AMBIGUOUS)
    qa_items_review(item_ids=[items[2].pk], status="draft", actor=admin)
    AdjudicationCase.objects.create(key=f"item:{items[3].item_key}", item=items[3], item_key=items[3].item_key,
                                    image=items[3].chain.image, status=AdjudicationCase.Status.OPEN, priority=0.5)
    release = release_create(actor=admin)
    assert release.excluded["left_out"] == {"ambiguous": 1, "not_reviewed": 1, "open_case": 1, "rejected": 1}
    assert release.items.count() == len(items) - 4
    assert not release.items.filter(item__in=items[:4]).exists()


def test_the_admin_may_include_left_out_items_explicitly_and_the_release_says_so(content, admin):
    items = list(_current())
    qa_items_review(item_ids=[items[0].pk], status="rejected", actor=admin)
    release = release_create(actor=admin, include=("rejected",))
    assert release.excluded["included_anyway"] == {"rejected": 1}
    assert release.items.get(item=items[0]).included_anyway == "rejected"
    with pytest.raises(ValidationError, match="cannot include"):
        release_create(actor=admin, version="2.0.0", include=("draft",))


@pytest.mark.parametrize("version,message", [("1.0", "not a semantic version"), ("v1.0.0", "not a semantic version"),
                                             ("01.0.0", "not a semantic version")])
def test_a_version_that_is_not_semver_is_refused_and_nothing_is_written(content, admin, version, message):
    with pytest.raises(ValidationError, match=message):
        release_create(actor=admin, version=version)
    assert not Release.objects.exists()


def test_a_release_with_no_items_is_refused(content, admin):
    with pytest.raises(ValidationError, match="at least one item"):
        release_create(actor=admin, filters={"modality": "PET"})
    assert not Release.objects.exists()


def test_the_semver_rule_major_for_a_gold_change_minor_for_additions_patch_for_nothing(content, admin, make_user):
    first = release_create(actor=admin)
    assert release_create(actor=admin).version == "1.0.1"          # nothing changed: a patch
    with pytest.raises(ValidationError, match="greater than the latest release 1.0.1"):
        release_create(actor=admin, version="1.0.1")
    # a gold change: the rule asks for a major version, and a minor one is refused
    item = next(i for i in _current() if i.category.answer_type == "single_choice")
    new_gold = next(o for o in item.options if o != item.gold_answer)
    revised = qa_item_revise(item=item, actor=admin, reason="radiologist: gold was wrong", gold_answer=new_gold)
    qa_items_review(item_ids=[revised.pk], status="approved", actor=admin)
    with pytest.raises(ValidationError, match="major version"):
        release_create(actor=admin, version="1.1.0")
    third = release_create(actor=admin)
    assert third.version == "2.0.0" and third.bump == "major"
    change = next(c for c in third.changes if c["kind"] == "changed")
    assert change["item_key"] == str(item.item_key) and change["gold_changed"]
    assert change["reason"] == "radiologist: gold was wrong"
    assert (change["from_version"], change["to_version"]) == (1, 2)
    diff = release_diff(older=first, newer=third)
    assert diff["bump"] == "major" and diff["counts"]["gold_changed"] == 1


def test_removing_items_asks_for_a_major_version_and_the_changelog_names_them(content, admin):
    release_create(actor=admin)
    item = _current().first()
    qa_items_review(item_ids=[item.pk], status="rejected", actor=admin)
    second = release_create(actor=admin)
    assert second.version == "2.0.0"
    removed = [c for c in second.changes if c["kind"] == "removed"]
    assert [c["item_key"] for c in removed] == [str(item.item_key)]


def test_publishing_an_unbuilt_release_is_refused(content, admin):
    release = release_create(actor=admin)
    with pytest.raises(ValidationError, match="build it before publishing"):
        release_publish(release=release, actor=admin)
    release.refresh_from_db()
    assert release.status == Release.Status.DRAFT
