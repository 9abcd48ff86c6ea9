"""Independent readers: each reader of a batch works on their own copy, in a Label Studio organization
of their own, and cannot reach the other readers' projects, tasks or annotations, neither in the Label
Studio web app (headless Chromium) nor through its API with their own token. Correction batches
pre-fill; each pulled box keeps its provenance (drawn, accepted, modified)."""
from __future__ import annotations

import os
import shutil

import httpx
import pytest

from annotation.models import GroundingBox
from labelstudio.models import LabelStudioAnnotation, ReaderProject, ReaderTask, ReaderWorkspace
from labelstudio.server import from_template
from labelstudio.services import batch_create, batch_push, batch_sync, tasks_sync
from labelstudio.services.readers import workspace_client

from .conftest import RADIOLOGISTS
from .test_sync import rect

pytestmark = [pytest.mark.django_db, pytest.mark.labelstudio]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SIZE = (300, 217)


@pytest.fixture(scope="module")
def iso_server(ls_template, tmp_path_factory):
    """A server of its own: provisioning moves the template's radiologists out of the shared organization."""
    server = from_template(ls_template, tmp_path_factory.mktemp("label-studio-readers"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def iso_settings(settings, iso_server):
    settings.LABEL_STUDIO_URL = settings.LABEL_STUDIO_PUBLIC_URL = iso_server.url
    settings.LABEL_STUDIO_API_KEY = iso_server.api_key
    settings.LABEL_STUDIO_WEBHOOK_SECRET = ""
    settings.LABEL_STUDIO_TIMEOUT_S = 10
    return settings


def as_reader(server, n: int) -> httpx.Client:
    """Label Studio's API with the reader's own token, as their browser or script would call it."""
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Token {RADIOLOGISTS[n]['token']}"},
                        timeout=10)


def push_double_read(iso_server, readers, curator, image, *, mode="independent"):
    batch = batch_create(name=f"double read {mode}", images=[image], readers=readers, maximum_annotations=2,
                         actor=curator, mode=mode)
    batch_push(batch=batch, actor=curator, provisioner=iso_server.provision_reader)
    batch.refresh_from_db()
    task = batch.tasks.get()
    copies = {c.reader_project.reader_id: c for c in ReaderTask.objects.filter(task=task)
              .select_related("reader_project__workspace")}
    return batch, task, [copies[r.pk] for r in readers]


def test_each_reader_gets_a_copy_in_an_organization_of_their_own(iso_settings, iso_server, radiologists, curator,
                                                                 wide_image):
    batch, task, (copy1, copy2) = push_double_read(iso_server, radiologists[:2], curator, wide_image)
    assert batch.status == "pushed" and batch.ls_project_id is None
    ws1, ws2 = copy1.reader_project.workspace, copy2.reader_project.workspace
    assert ws1.ls_organization_id != ws2.ls_organization_id
    assert copy1.reader_project.ls_project_id != copy2.reader_project.ls_project_id
    for ws, copy in ((ws1, copy1), (ws2, copy2)):
        client = workspace_client(ws)
        project = client.sdk.projects.get(id=copy.reader_project.ls_project_id)
        assert project.show_collab_predictions is False and not project.model_version
        assert client.get_task(copy.ls_task_id)["predictions"] == [], "an independent read is never pre-filled"
        members = {u.email for u in client.sdk.users.list()}
        assert members == {ws.ls_email, ws.ls_service_email}, "the reader is alone in their organization"
        client.close()
    # pushing again imports nothing; provisioning again finds the same organization
    again = batch_push(batch=batch, actor=curator, provisioner=iso_server.provision_reader)
    assert again.created == 0 and ReaderWorkspace.objects.count() == 2
    assert iso_server.provision_reader(RADIOLOGISTS[0]["email"])["organization_id"] == ws1.ls_organization_id


def test_readers_cannot_reach_each_others_work_in_the_ui_or_the_api(iso_settings, iso_server, radiologists,
                                                                    curator, wide_image):
    """The target: two readers of one task, each logged in to Label Studio (headless Chromium) and
    each with their own API token; neither reaches the other's project, task copy or annotation."""
    batch, task, (copy1, copy2) = push_double_read(iso_server, radiologists[:2], curator, wide_image)
    p1, p2 = copy1.reader_project.ls_project_id, copy2.reader_project.ls_project_id
    api1, api2 = as_reader(iso_server, 0), as_reader(iso_server, 1)
    ann1 = api1.post(f"/api/tasks/{copy1.ls_task_id}/annotations/",
                     json={"result": rect("a", "nodule", (10, 10, 60, 50), SIZE), "lead_time": 3})
    ann2 = api2.post(f"/api/tasks/{copy2.ls_task_id}/annotations/",
                     json={"result": rect("b", "nodule", (12, 10, 60, 52), SIZE), "lead_time": 4})
    assert ann1.status_code == ann2.status_code == 201, (ann1.text, ann2.text)
    ann1_id, ann2_id = ann1.json()["id"], ann2.json()["id"]

    for mine, project, other_project, copy, other_copy, other_ann in (
            (api1, p1, p2, copy1, copy2, ann2_id), (api2, p2, p1, copy2, copy1, ann1_id)):
        listed = [p["id"] for p in mine.get("/api/projects/").json()["results"]]
        assert project in listed and other_project not in listed
        assert mine.get(f"/api/projects/{other_project}/").status_code in (403, 404)
        assert mine.get(f"/api/tasks/{other_copy.ls_task_id}/").status_code in (403, 404)
        assert mine.get(f"/api/annotations/{other_ann}/").status_code in (403, 404)
        assert mine.get(f"/api/tasks/{other_copy.ls_task_id}/annotations/").status_code in (403, 404)
        other_tasks = mine.get("/api/tasks/", params={"project": other_project})
        assert other_tasks.status_code in (403, 404) or other_tasks.json().get("tasks") == []
        own = mine.get(f"/api/tasks/{copy.ls_task_id}/").json()
        assert [a["id"] for a in own["annotations"]] != [] and other_ann not in [a["id"] for a in own["annotations"]]
        mine.close()

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"   # Playwright's sync API runs an event loop in this thread
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            for n, (project, other_project, other_copy, other_ann) in enumerate(
                    ((p1, p2, copy2, ann2_id), (p2, p1, copy1, ann1_id))):
                page = browser.new_context().new_page()
                page.goto(f"{iso_server.url}/user/login/")
                page.fill("input[name=email]", RADIOLOGISTS[n]["email"])
                page.fill("input[name=password]", RADIOLOGISTS[n]["password"])
                page.click("button[type=submit]")
                page.wait_for_url(lambda url: "/user/login" not in url, timeout=30_000)
                page.goto(f"{iso_server.url}/projects/")
                page.get_by_text(f"[medr2-batch-{batch.pk}-reader-{radiologists[n].pk}]").first.wait_for(
                    timeout=30_000)
                assert f"reader-{radiologists[1 - n].pk}]" not in page.content()
                # the web app's own API calls, with the logged-in session
                session = page.request
                listed = [p["id"] for p in session.get(f"{iso_server.url}/api/projects/").json()["results"]]
                assert project in listed and other_project not in listed
                assert session.get(f"{iso_server.url}/api/projects/{other_project}/").status in (403, 404)
                assert session.get(f"{iso_server.url}/api/tasks/{other_copy.ls_task_id}/").status in (403, 404)
                assert session.get(f"{iso_server.url}/api/annotations/{other_ann}/").status in (403, 404)
                page.goto(f"{iso_server.url}/projects/{other_project}/data?task={other_copy.ls_task_id}")
                page.wait_for_load_state("networkidle")
                assert "nodule" not in page.content()
                page.context.close()
        finally:
            browser.close()

    # and the platform pulls both copies and compares them
    batch_sync(batch=batch)
    task.refresh_from_db()
    rows = LabelStudioAnnotation.objects.filter(task=task, status="active")
    assert {r.author_id for r in rows} == {radiologists[0].pk, radiologists[1].pk}
    assert task.status == "done" and task.agreement["n_annotators"] == 2
    assert task.agreement["pairs"][0]["matched"], "the two readers' nodules match across their copies"


def test_a_pre_filled_box_submitted_unchanged_is_stored_as_accepted(iso_settings, iso_server, radiologists, curator,
                                                                    phantom_images):
    (phantom,) = phantom_images(1)
    batch, task, (copy1, copy2) = push_double_read(iso_server, radiologists[:2], curator, phantom, mode="correction")
    api1, api2 = as_reader(iso_server, 0), as_reader(iso_server, 1)
    ls_task = api1.get(f"/api/tasks/{copy1.ls_task_id}/").json()
    assert ls_task["predictions"], "a correction batch is pre-filled"
    prefilled = [r for r in ls_task["predictions"][0]["result"] if r["type"] == "rectanglelabels"]
    accepted = dict(prefilled[0], origin="prediction")
    size = (phantom.width, phantom.height)
    drawn = rect("mine", "cyst", (1, 1, 9, 9), size)[0]
    created = api1.post(f"/api/tasks/{copy1.ls_task_id}/annotations/", json={"result": [accepted, drawn]})
    assert created.status_code == 201
    # the second reader moves the same pre-filled box by a few pixels (the editor keeps the region id)
    moved = {**prefilled[0], "value": {**prefilled[0]["value"], "x": prefilled[0]["value"]["x"] + 1.0}}
    assert api2.post(f"/api/tasks/{copy2.ls_task_id}/annotations/", json={"result": [moved]}).status_code == 201

    tasks_sync(ls_task_ids=[copy1.ls_task_id, copy2.ls_task_id])
    boxes = {(b.author_id, b.ls_result_id): b.provenance for b in GroundingBox.objects.filter(status="active",
                                                                                              source="label_studio")}
    assert boxes[(radiologists[0].pk, prefilled[0]["id"])] == "accepted"
    assert boxes[(radiologists[0].pk, "mine")] == "drawn"
    assert boxes[(radiologists[1].pk, prefilled[0]["id"])] == "modified"
    task.refresh_from_db()
    # an accepted pre-annotation is not the first reader's own judgment: left out of the agreement
    assert task.agreement["accepted_boxes"] == {str(radiologists[0].pk): 1}
    pair = task.agreement["pairs"][0]
    assert pair["matched"] == [], "the accepted box is not compared with the second reader's box"
    assert ReaderProject.objects.filter(batch=batch).count() == 2
    api1.close()
    api2.close()


def test_add_user_with_a_mixed_case_email_can_log_in(iso_server):
    """Label Studio lowercases the email at login: the account must be stored lower case."""
    from labelstudio.server import main

    assert main(["add-user", "--email", "Dr.Mixed@Example.ORG", "--password", "Mixed-Secret-123",
                 "--data-dir", str(iso_server.data_dir), "--venv", str(iso_server.venv),
                 "--port", str(iso_server.port)]) == 0
    with httpx.Client(base_url=iso_server.url, timeout=10) as web:
        web.get("/user/login/")
        response = web.post("/user/login/", data={
            "email": "Dr.Mixed@Example.ORG", "password": "Mixed-Secret-123",
            "csrfmiddlewaretoken": web.cookies["csrftoken"]}, headers={"Referer": f"{iso_server.url}/user/login/"})
    assert response.status_code == 302 and "/user/login" not in response.headers["location"]
