"""Each role's start page says what to do next, with counts and a link (dashboard/next_steps.py), and
the annotator's worklist says it without explaining the server's configuration."""
from __future__ import annotations

import re
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.roles import Role
from annotation.models import ImportBatch
from annotation.services.images import BytesSource, images_import
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _steps(html: str, role: str) -> list[str]:
    """The text of each step in the role's panel (tags dropped, whitespace collapsed)."""
    panel = re.search(rf'<section class="next-steps" id="next-steps-{role}".*?</section>', html, re.S)
    assert panel, f"no next-steps panel for {role}"
    items = re.findall(r"<li[^>]*>(.*?)</li>", panel.group(0), re.S)
    return [" ".join(unescape(re.sub(r"<[^>]+>", " ", i)).split()) for i in items]


def _dashboard(user) -> str:
    response = _client(user).get(reverse("dashboard:index"))
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def images(curator):
    batch = images_import(sources=[BytesSource(f"s{n}.png", png_bytes(color=40 + n)) for n in range(3)],
                          actor=curator, source=ImportBatch.Source.UPLOAD)
    return list(batch.images.order_by("pk"))


def test_an_annotator_with_nothing_assigned_is_told_who_assigns_work(users):
    html = _dashboard(users[Role.ANNOTATOR])
    assert _steps(html, "annotator") == ["Nothing is assigned to you yet: your curator will assign you a batch, "
                                         "and it will appear here and on your worklist."]
    worklist = _client(users[Role.ANNOTATOR]).get(reverse("labelstudio:worklist")).content.decode()
    assert "Nothing is assigned to you yet" in worklist


def test_an_annotator_sees_the_tasks_waiting_in_each_batch_with_a_link_to_label_studio(users, images, settings):
    from labelstudio.models import AnnotationBatch, AnnotationTask, LabelStudioAnnotation
    from labelstudio.services import batch_create

    settings.LABEL_STUDIO_URL = settings.LABEL_STUDIO_PUBLIC_URL = "http://ls.example:8080"
    annotator, curator = users[Role.ANNOTATOR], users[Role.CURATOR]
    batch = batch_create(name="Liver CT", images=images, readers=[annotator], maximum_annotations=2, actor=curator)
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=41, status="pushed")
    first = AnnotationTask.objects.filter(batch=batch).order_by("pk").first()
    LabelStudioAnnotation.objects.create(task=first, ls_annotation_id=5001, author=annotator, result=[],
                                         result_hash="0" * 64)
    html = _dashboard(annotator)
    assert _steps(html, "annotator")[0] == "2 tasks waiting in batch “Liver CT” (1 of 3 done by you). " \
                                           "Open in Label Studio ↗"
    assert 'href="http://ls.example:8080/projects/41/data"' in html
    # a task that has all its annotations (from others) no longer waits for this reader
    AnnotationTask.objects.filter(batch=batch).exclude(pk=first.pk).update(status="done")
    assert _steps(_dashboard(annotator), "annotator")[0].startswith("All your tasks are done (1 task in 1 batch)")


def test_a_batch_not_yet_in_label_studio_says_it_will_open_there(users, images):
    from labelstudio.services import batch_create

    annotator = users[Role.ANNOTATOR]
    batch_create(name="Draft batch", images=images[:2], readers=[annotator], actor=users[Role.CURATOR])
    assert _steps(_dashboard(annotator), "annotator")[0] == (
        "2 tasks in batch “Draft batch” will open in Label Studio once your curator has sent the batch there.")


def test_the_worklist_explains_configuration_to_curators_only(users, images, settings):
    from labelstudio.services import batch_create

    settings.LABEL_STUDIO_URL = ""
    annotator, curator = users[Role.ANNOTATOR], users[Role.CURATOR]
    batch_create(name="Chest", images=images[:1], readers=[annotator], actor=curator)
    mine = _client(annotator).get(reverse("labelstudio:worklist")).content.decode()
    assert "LABEL_STUDIO_URL" not in mine and "docs/labelstudio.md" not in mine
    assert 'id="your-tasks"' in mine and "Label Studio is not connected to this server yet: ask your curator." in mine
    assert "Disagreements" not in mine
    theirs = _client(curator).get(reverse("labelstudio:worklist")).content.decode()
    assert "LABEL_STUDIO_URL" in theirs and 'id="worklist-setup"' in theirs and 'id="your-tasks"' not in theirs


def test_a_curator_sees_review_import_run_and_release_steps(users, images):
    from annotation.models import QAItem, TaskCategory
    from annotation.services.qa import chain_create, qa_item_create, qa_items_review
    from releases.models import Release
    from workers.models import EvaluationRun

    curator = users[Role.CURATOR]
    chain = chain_create(image=images[0], actor=curator)
    category = TaskCategory.objects.get(code="modality")
    items = [qa_item_create(chain=chain, step=n, category=category, question=f"Q{n}", options=["CT", "MR"],
                            gold_answer="CT", actor=curator) for n in range(1, 4)]
    qa_items_review(item_ids=[items[0].pk, items[1].pk], status=QAItem.Status.IN_REVIEW, actor=curator)
    ImportBatch.objects.update(files_failed=1)
    run = EvaluationRun.objects.create(name="Baseline sweep", status="completed", scored_at=timezone.now())
    Release.objects.create(version="1.0.0", status="built", created_date=timezone.now().date())
    steps = _steps(_dashboard(curator), "curator")
    assert "2 QA items in review wait for approval or rejection. Review" in steps
    assert "1 draft QA item not reviewed yet. Review drafts" in steps
    assert any(s.startswith("The latest import (") and s.endswith("has 1 failed file. See why") for s in steps)
    assert "1 scored run not marked as reference: only reference runs open adjudication cases. Latest: " \
           "“Baseline sweep”. Review the run" in steps
    assert "Release 1.0.0 is built, not published. Open" in steps
    html = _dashboard(curator)
    assert f'href="{reverse("workers:run-detail", args=[run.pk])}"' in html
    assert f'href="{reverse("annotation:item-list")}?status=in_review"' in html
    EvaluationRun.objects.filter(pk=run.pk).update(is_reference=True)
    assert not any("not marked as reference" in s for s in _steps(_dashboard(curator), "curator"))


def test_an_adjudicator_is_sent_to_the_cases_waiting(users, images):
    from adjudication.models import AdjudicationCase, CaseReading

    reader = users[Role.ADJUDICATOR]
    assert _steps(_dashboard(reader), "adjudicator")[0].startswith("No cases wait for you.")
    case = AdjudicationCase.objects.create(key="image:1", image=images[0], rules=",model_consensus,", hits=[],
                                           priority=0.9)
    CaseReading.objects.create(case=case, reader=reader)
    html = _dashboard(reader)
    assert _steps(html, "adjudicator")[0] == "1 case assigned to you. Start reading"
    assert f'href="{reverse("adjudication:next")}"' in html


def test_an_auditor_is_asked_to_sign_and_to_verify(users):
    from reports.models import Report, ReportVersion

    auditor = users[Role.AUDITOR]
    report = Report.objects.create(title="Chest X-ray models, Q3")
    version = ReportVersion.objects.create(report=report, number=2, status="ready")
    steps = _steps(_dashboard(auditor), "auditor")
    assert steps[0] == "1 report version you have not signed. Latest: “Chest X-ray models, Q3” version 2. Read and sign"
    assert steps[1] == "No signed audit checkpoint yet; the trail can still be verified. Verify"
    assert f'href="{reverse("reports:version-detail", args=[version.pk])}"' in _dashboard(auditor)


def test_an_admin_sees_users_by_role_and_those_without_one(users):
    admin = users[Role.ADMIN]
    steps = _steps(_dashboard(admin), "admin")
    assert steps[0] == ("6 active users: 1 annotator, 1 adjudicator, 1 curator, 1 auditor, 1 admin. Users and roles")
    assert steps[1] == "1 user without a role see nothing: give each a role. Assign roles"
    listing = _client(admin).get(reverse("admin:auth_user_changelist") + "?groups__isnull=True")
    assert listing.status_code == 200 and users[None].username in listing.content.decode()
    assert users[Role.CURATOR].username not in listing.content.decode()


def test_the_start_page_runs_a_bounded_number_of_queries(users, images, django_assert_max_num_queries):
    from labelstudio.services import batch_create

    for n in range(5):
        batch_create(name=f"b{n}", images=images, readers=[users[Role.ANNOTATOR]], actor=users[Role.CURATOR])
    for role in Role:
        client = _client(users[role])
        client.get(reverse("dashboard:index"))
        with django_assert_max_num_queries(40):
            assert client.get(reverse("dashboard:index")).status_code == 200
