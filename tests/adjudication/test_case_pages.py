"""The case page, the queue's assignment form, the verdict API and the agreement dashboard, as the
server renders them (the browser tests in tests/e2e drive the same pages with the keyboard)."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from adjudication.models import AdjudicationCase, CaseReading
from annotation.models import QAItem

from .test_facts import scored  # noqa: F401  (fixture)
from .test_verdicts import consensus_case  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def test_case_page_shows_the_chain_and_blinds_model_names_for_adjudicators(consensus_case, users):  # noqa: F811
    case, item = consensus_case["case"], consensus_case["item"]
    url = reverse("adjudication:case-detail", args=[case.pk])
    page = _client(users[Role.ADJUDICATOR]).get(url).content.decode()
    assert item.question in page and 'id="verdict-form"' in page and 'class="mv"' in page
    assert "Model A" in page and "model-a" not in page, "adjudicators judge blind to model identity"
    assert '"key": "m1"' in page and '"name": "Model A"' in page, "the viewer's model layers, blinded"
    pixels = _client(users[Role.ADJUDICATOR]).get(reverse("adjudication:case-pixels", args=[case.pk]))
    assert pixels.status_code == 200 and pixels["X-Pixel-Dtype"] in ("int16", "float32")
    steps = QAItem.objects.filter(chain=item.chain, is_current=True).count()
    assert page.count('<tr class="') >= steps
    curator_page = _client(users[Role.CURATOR]).get(url).content.decode()
    assert "model-a" in curator_page and 'id="verdict-form"' not in curator_page
    image = _client(users[Role.ADJUDICATOR]).get(reverse("adjudication:case-image", args=[case.pk]))
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert _client(users[Role.ANNOTATOR]).get(url).status_code == 403


def test_saving_a_verdict_opens_the_next_case(consensus_case, users):  # noqa: F811
    case = consensus_case["case"]
    other = AdjudicationCase.objects.exclude(pk=case.pk).filter(status="open").order_by("-priority", "id").first()
    reader = _client(users[Role.ADJUDICATOR])
    r = reader.post(reverse("adjudication:case-detail", args=[case.pk]), {
        "verdict": "confirmed", "version": case.version, "comment": "gold is right", "time_spent_s": "12.5"})
    assert r.status_code == 302
    if other is not None:
        assert r["Location"] == reverse("adjudication:case-detail", args=[other.pk])
    else:
        assert r["Location"] == reverse("adjudication:queue")
    case.refresh_from_db()
    assert case.status == "resolved" and case.outcome == "confirmed"
    assert CaseReading.objects.get(case=case).comment == "gold is right"


def test_the_conflict_page_says_so_and_keeps_the_comment(consensus_case, users, make_user):  # noqa: F811
    case = consensus_case["case"]
    first = make_user(Role.ADJUDICATOR, "dr-first")
    _client(first).post(reverse("adjudication:case-detail", args=[case.pk]),
                        {"verdict": "confirmed", "version": case.version})
    r = _client(users[Role.ADJUDICATOR]).post(reverse("adjudication:case-detail", args=[case.pk]), {
        "verdict": "flawed", "version": case.version, "comment": "my careful note"})
    assert r.status_code == 409
    body = r.content.decode()
    assert 'id="conflict"' in body and "dr-first" in body and "not saved" in body
    assert "my careful note" in body, "the reader's text is not lost"
    case.refresh_from_db()
    assert case.outcome == "confirmed"


def test_a_reader_who_annotated_the_image_sees_no_form_and_cannot_post(consensus_case, make_user):  # noqa: F811
    from annotation.services.findings import finding_create

    case = consensus_case["case"]
    drew = make_user(Role.ADJUDICATOR, "dr-drew")
    finding_create(image=case.image, kind="lesion", label="cyst", actor=drew, source="manual", box=(1, 1, 4, 4))
    c = _client(drew)
    assert c.get(reverse("adjudication:case-detail", args=[case.pk])).status_code == 404, "not in their queue at all"
    assert c.post(reverse("adjudication:case-detail", args=[case.pk]),
                  {"verdict": "confirmed", "version": case.version}).status_code == 404
    api = c.post(reverse("adjudication:api-case-verdict", args=[case.pk]),
                 {"verdict": "confirmed", "version": case.version}, content_type="application/json")
    assert api.status_code == 404
    assert CaseReading.objects.count() == 0


def test_verdict_api_returns_409_on_a_stale_version(consensus_case, users, make_user):  # noqa: F811
    case = consensus_case["case"]
    url = reverse("adjudication:api-case-verdict", args=[case.pk])
    ok = _client(make_user(Role.ADJUDICATOR)).post(url, {"verdict": "confirmed", "version": case.version},
                                                    content_type="application/json")
    assert ok.status_code == 200 and ok.json()["status"] == "resolved"
    stale = _client(users[Role.ADJUDICATOR]).post(url, {"verdict": "ambiguous", "version": case.version},
                                                  content_type="application/json")
    assert stale.status_code in (404, 409)   # resolved cases leave an unrelated adjudicator's queue
    admin = _client(users[Role.ADMIN]).post(url, {"verdict": "ambiguous", "version": case.version},
                                            content_type="application/json")
    case.refresh_from_db()
    assert admin.status_code == 409
    assert admin.json() == {"code": "conflict", "detail": admin.json()["detail"], "version": case.version}
    assert "resolved this case" in admin.json()["detail"], "one readable sentence"


def test_verdict_api_refuses_a_bad_correction_in_the_one_error_shape(consensus_case, make_user):  # noqa: F811
    case = consensus_case["case"]
    url = reverse("adjudication:api-case-verdict", args=[case.pk])
    reader = _client(make_user(Role.ADJUDICATOR))
    bad = reader.post(url, {"verdict": "corrected", "answer": "not an option", "version": case.version},
                      content_type="application/json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid" and "fields" not in bad.json()
    assert bad.json()["detail"].startswith("pick the new answer from the item's options")
    unknown = reader.post(url, {"verdict": "maybe", "version": case.version}, content_type="application/json")
    assert unknown.status_code == 400 and unknown.json()["code"] == "invalid"
    assert list(unknown.json()["fields"]) == ["verdict"]
    case.refresh_from_db()
    assert case.status == "open" and not case.readings.exists(), "nothing was written"


def test_curator_assigns_round_robin_from_the_queue_and_readers_see_their_cases(consensus_case, users,  # noqa: F811
                                                                               make_user):
    r1, r2 = make_user(Role.ADJUDICATOR, "dr-a"), make_user(Role.ADJUDICATOR, "dr-b")
    n_open = AdjudicationCase.objects.filter(status="open").count()
    r = _client(users[Role.CURATOR]).post(reverse("adjudication:queue"), {"double_read": "on"}, follow=True)
    assert "Assigned" in r.content.decode()
    assert CaseReading.objects.count() == 2 * n_open
    assert set(CaseReading.objects.values_list("role", flat=True)) == {"primary", "second"}
    for reader in (r1, r2, users[Role.ADJUDICATOR]):
        reads = CaseReading.objects.filter(reader=reader).count()
        # every case has its two readers: an adjudicator's queue holds exactly the cases they read
        assert _client(reader).get(reverse("adjudication:api-case-list")).json()["count"] == reads
        assert _client(reader).get(reverse("adjudication:api-case-list"), {"mine": "assigned"}).json()["count"] == reads
    assert _client(users[Role.ADJUDICATOR]).post(reverse("adjudication:queue"), {}).status_code == 403


def test_agreement_dashboard_reports_kappa_and_outcomes(consensus_case, users, make_user):  # noqa: F811
    from adjudication.services import case_assign, case_verdict_submit

    case = consensus_case["case"]
    r1, r2 = make_user(Role.ADJUDICATOR), make_user(Role.ADJUDICATOR)
    case_assign(case=case, readers=[r1, r2], actor=users[Role.CURATOR], double_read=True)
    case.refresh_from_db()
    for r in (r1, r2):
        case_verdict_submit(case_id=case.pk, reader=r, verdict="confirmed", expected_version=case.version,
                            time_spent_s=30)
    page = _client(users[Role.AUDITOR]).get(reverse("adjudication:agreement")).content.decode()
    assert case.category.name in page and "Krippendorff" in page and "30 s" in page
    from adjudication.selectors import agreement_summary

    rows = {r.category: r for r in agreement_summary()}
    row = rows[case.category.code]
    assert row.resolved == 1 and row.outcomes == {"confirmed": 1} and row.double_read == 1
    assert row.cohen == 1.0 and row.fleiss == 1.0
    assert rows["all"].cases == AdjudicationCase.objects.count()


def test_rule_evidence_names_chain_steps_and_hides_model_names():
    from adjudication.selectors import _hit_views

    hits = [{"rule": "right_answer_wrong_evidence", "priority": 0.7, "models": ["gpt-x"],
             "evidence": {"models": {"gpt-x": {"weak_grounding": [{"item": 11, "iou": 0.2}], "wrong_earlier": [12]}},
                          "agree": 11}}]
    from adjudication.rules import RULES
    from adjudication.selectors import _as_steps

    (title, priority, models, evidence, description), = _hit_views(hits, {"gpt-x": "Model A"}, False,
                                                                   {11: 5, 12: 2})
    assert title == "Right answer, wrong evidence" and models == ["Model A"]
    assert description == RULES["right_answer_wrong_evidence"].description
    assert evidence == [("Model A: weak or missing box at", "step 5 (IoU 0.20)"),
                        ("Model A: wrong at earlier", "step 2")], "a table: names as the page shows them, steps"
    assert "gpt-x" not in str(evidence)
    assert _as_steps({"agree": 11, "item": 11}, {11: 5}) == {"agree": 11, "item": "step 5"}, \
        "numbers that are not item ids stay numbers"
    (_, _, named, named_evidence, _), = _hit_views(hits, {"gpt-x": "Model A"}, True, {})
    assert named == ["gpt-x"] and named_evidence[0][0] == "gpt-x: weak or missing box at"


def test_dashboard_tells_an_adjudicator_what_waits_for_them(consensus_case, users, make_user):  # noqa: F811
    from adjudication.services import case_assign

    reader = users[Role.ADJUDICATOR]
    n_open = AdjudicationCase.objects.filter(status="open").count()
    case_assign(case=consensus_case["case"], readers=[reader], actor=users[Role.CURATOR])
    page = _client(reader).get(reverse("dashboard:index")).content.decode()
    assert 'id="cases-waiting"' in page
    assert f'>1</div><div class="l">adjudication cases assigned to you · {n_open - 1} unassigned' in page
    assert 'id="cases-waiting"' not in _client(users[Role.CURATOR]).get(reverse("dashboard:index")).content.decode()


def test_garbled_form_fields_get_a_message_not_a_server_error(consensus_case, users):  # noqa: F811
    case = consensus_case["case"]
    r = _client(users[Role.CURATOR]).post(reverse("adjudication:queue"), {"limit": "lots"}, follow=True)
    assert r.status_code == 200 and "whole number from 1 to 5000" in r.content.decode()
    r = _client(users[Role.ADJUDICATOR]).post(reverse("adjudication:case-detail", args=[case.pk]),
                                              {"verdict": "confirmed", "version": "v?", "time_spent_s": "soon"})
    assert r.status_code == 409 and "reload" in r.content.decode()
    assert CaseReading.objects.count() == 0
