"""Every page and API endpoint × every role (plus no role and anonymous)."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from annotation.models import ImportBatch
from annotation.services.images import BytesSource, images_import
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db

A, J, C, U, M, N = Role.ANNOTATOR, Role.ADJUDICATOR, Role.CURATOR, Role.AUDITOR, Role.ADMIN, None
ALL_ROLES = {A, J, C, U, M}


@pytest.fixture
def image_and_batch(curator):
    batch = images_import(sources=[BytesSource("one.png", png_bytes(color=77))], actor=curator,
                          source=ImportBatch.Source.UPLOAD)
    return batch.images.get(), batch


@pytest.fixture
def content(phantom_images):
    """A chain with items and variants on a phantom image nobody is assigned to."""
    from annotation.models import Chain, QAItem, Variant
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate

    (image,) = phantom_images(1)
    chains_generate(image_ids=[image.pk], actor=None, seed=0)
    QAItem.objects.update(status="approved")
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0)
    visual = Variant.objects.exclude(image_recipe=None).first()
    return {"chain": Chain.objects.get(), "item": QAItem.objects.order_by("pk").first(), "variant": visual}


# (name, method, url kwargs key, roles allowed, status when allowed, status for a role that is not
#  allowed). Annotators and adjudicators get 404 for images not assigned to them (ids do not leak);
#  annotators get 403 for every QA item, chain and variant (they carry the gold: annotators read blind).
PAGES = [
    ("dashboard:index", "get", None, ALL_ROLES, 200, 403),
    ("annotation:image-list", "get", None, ALL_ROLES, 200, 403),
    ("annotation:image-detail", "get", "image", {C, U, M}, 200, {A: 404, J: 404, N: 403}),
    ("annotation:image-file", "get", "image", {C, U, M}, 200, {A: 404, J: 404, N: 403}),
    ("annotation:image-import", "get", None, {C, M}, 200, 403),
    ("annotation:import-batch", "get", "batch", {C, M}, 200, 403),
    ("annotation:image-assign", "get", None, {C, M}, 200, 403),
    ("annotation:image-assign", "post", "assign-image", {C, M}, 302, 403),
    ("annotation:api-image-assign", "post", "assign-image", {C, M}, 200, 403),
    ("audit:event-list", "get", None, {U, M}, 200, 403),
    ("audit:verify", "get", None, {U, M}, 200, 403),
    ("annotation:api-image-list", "get", None, ALL_ROLES, 200, 403),
    ("annotation:api-image-detail", "get", "image", {C, U, M}, 200, {A: 404, J: 404, N: 403}),
    ("annotation:api-image-upload", "post", None, {C, M}, 201, 403),
    ("annotation:api-taxonomy", "get", None, ALL_ROLES, 200, 403),
    ("audit:api-event-list", "get", None, {U, M}, 200, 403),
    ("audit:api-verify", "get", None, {U, M}, 200, 403),
    ("audit:event-export", "get", "export:csv", {U, M}, 200, 403),
    ("audit:api-event-export", "get", "export:jsonl", {U, M}, 200, 403),
    ("admin:index", "get", None, {M}, 200, 302),
    ("annotation:item-list", "get", None, {J, C, U, M}, 200, 403),
    ("annotation:item-detail", "get", "item", {C, U, M}, 200, {J: 404, N: 403}),
    ("annotation:item-edit", "get", "item", {C, M}, 200, 403),
    ("annotation:item-review", "post", "review", {C, M}, 302, 403),
    ("annotation:chain-detail", "get", "chain", {C, U, M}, 200, {J: 404, N: 403}),
    ("annotation:variant-image", "get", "variant", {C, U, M}, 200, {J: 404, N: 403}),
    ("annotation:category-list", "get", None, ALL_ROLES, 200, 403),
    ("annotation:category-edit", "get", "category", {C, M}, 200, 403),
    ("annotation:api-item-list", "get", None, {J, C, U, M}, 200, 403),
    ("annotation:api-item-detail", "get", "item", {C, U, M}, 200, {J: 404, N: 403}),
    ("annotation:api-item-detail", "patch", "item", {C, M}, 201, {A: 403, J: 403, U: 403, N: 403}),
    ("annotation:api-item-review", "post", "review", {C, M}, 200, 403),
    ("annotation:api-chain-list", "get", None, {J, C, U, M}, 200, 403),
    ("annotation:api-variant-list", "get", None, {J, C, U, M}, 200, 403),
    ("annotation:api-chain-detail", "get", "chain", {C, U, M}, 200, {J: 404, N: 403}),
    ("annotation:api-item-variants", "get", "item", {C, U, M}, 200, {J: 404, N: 403}),
    ("annotation:api-variant-detail", "get", "variant", {C, U, M}, 200, {J: 404, N: 403}),
    ("annotation:api-variant-image", "get", "variant", {C, U, M}, 200, {J: 404, N: 403}),
    ("workers:model-list", "get", None, {C, U, M}, 200, 403),
    ("workers:model-create", "post", "new-endpoint", {C, M}, 302, 403),
    ("workers:run-list", "get", None, {C, U, M}, 200, 403),
    ("workers:run-create", "get", None, {C, M}, 200, 403),
    ("workers:run-create", "post", "new-run", {C, M}, 302, 403),
    ("workers:run-detail", "get", "run", {C, U, M}, 200, 403),
    ("workers:run-progress", "get", "run", {C, U, M}, 200, 403),
    ("workers:run-predictions", "get", "run", {C, U, M}, 200, 403),
    ("workers:run-export", "get", "run:json", {C, U, M}, 200, 403),
    ("workers:run-export", "get", "run:csv", {C, U, M}, 200, 403),
    ("workers:run-action", "post", "run:rescore", {C, M}, 302, 403),
    ("workers:api-model-list", "get", None, {C, U, M}, 200, 403),
    ("workers:api-model-list", "post", "new-endpoint", {C, M}, 201, 403),
    ("workers:api-run-list", "get", None, {C, U, M}, 200, 403),
    ("workers:api-run-list", "post", "new-run", {C, M}, 201, 403),
    ("workers:api-run-preview", "get", None, {C, M}, 200, 403),
    ("workers:api-run-detail", "get", "run", {C, U, M}, 200, 403),
    ("workers:api-run-results", "get", "run", {C, U, M}, 200, 403),
    ("workers:api-run-predictions", "get", "run", {C, U, M}, 200, 403),
    ("workers:api-run-action", "post", "run:rescore", {C, M}, 202, 403),
    ("labelstudio:worklist", "get", None, ALL_ROLES, 200, 403),
    ("labelstudio:batch-create", "get", None, {C, M}, 200, 403),
    ("labelstudio:batch-create", "post", "new-ls-batch", {C, M}, 302, 403),
    ("labelstudio:batch-detail", "get", "ls-batch", {C, U, M}, 200, {A: 404, J: 404, N: 403}),
    ("labelstudio:batch-action", "post", "ls-batch:sync", {C, M}, 302, 403),
    ("labelstudio:task-detail", "get", "ls-batch:task", {C, U, M}, 200, 403),
    ("labelstudio:api-batch-list", "get", None, ALL_ROLES, 200, 403),
    ("labelstudio:api-batch-list", "post", "new-ls-batch", {C, M}, 201, 403),
    ("labelstudio:api-batch-detail", "get", "ls-batch", {C, U, M}, 200, {A: 404, J: 404, N: 403}),
    ("labelstudio:api-batch-tasks", "get", "ls-batch", {C, U, M}, 200, {A: 404, J: 404, N: 403}),
    ("labelstudio:api-batch-sync-log", "get", "ls-batch", {C, M}, 200, 403),
    ("labelstudio:api-batch-action", "post", "ls-batch:sync", {C, M}, 409, 403),
    ("adjudication:queue", "get", None, {J, C, U, M}, 200, 403),
    ("adjudication:api-case-list", "get", None, {J, C, U, M}, 200, 403),
    ("adjudication:agreement", "get", None, {J, C, U, M}, 200, 403),
    ("adjudication:next", "get", None, {J, M}, 302, 403),
    ("adjudication:case-detail", "get", "case", {J, C, U, M}, 200, 403),
    ("adjudication:case-image", "get", "case", {J, C, U, M}, 200, 403),
    ("adjudication:case-assign", "post", "case:assign", {C, M}, 302, 403),
    ("adjudication:api-case-detail", "get", "case", {J, C, U, M}, 200, 403),
    ("adjudication:api-case-verdict", "post", "case:verdict", {J, M}, 400, 403),   # empty body: refused or invalid
    ("adjudication:api-case-assign", "post", "case:round-robin", {C, M}, 200, 403),
    ("validity:shortcut-list", "get", None, {C, U, M}, 200, 403),
    ("validity:shortcut-create", "post", "new-shortcut-audit", {C, M}, 302, 403),
    ("validity:shortcut-detail", "get", "shortcut-audit", {C, U, M}, 200, 403),
    ("validity:api-shortcut-audits", "get", None, {C, U, M}, 200, 403),
    ("validity:api-shortcut-audits", "post", "new-shortcut-audit", {C, M}, 202, 403),
    ("validity:api-shortcut-audit", "get", "shortcut-audit", {C, U, M}, 200, 403),
    ("reports:report-list", "get", None, {C, U, M}, 200, 403),
    ("reports:report-create", "get", None, {U, M}, 200, 403),
    ("reports:report-detail", "get", "report", {C, U, M}, 200, 403),
    ("reports:report-generate", "post", "report", {U, M}, 302, 403),
    ("reports:version-detail", "get", "report-version", {C, U, M}, 200, 403),
    ("reports:version-progress", "get", "report-version", {C, U, M}, 200, 403),
    ("reports:version-file", "get", "report-version:pdf", {C, U, M}, 200, 403),
    ("reports:version-sign", "post", "report-version:sign", {U, M}, 400, 403),   # a wrong password: refused
    ("reports:api-report-list", "get", None, {C, U, M}, 200, 403),
    ("reports:api-report-detail", "get", "report", {C, U, M}, 200, 403),
    ("reports:api-version-detail", "get", "report-version", {C, U, M}, 200, 403),
    ("reports:api-version-file", "get", "report-version:json", {C, U, M}, 200, 403),
    ("reports:api-version-sign", "post", "report-version:sign", {U, M}, 400, 403),
    ("finetune:job-list", "get", None, {C, U, M}, 200, 403),
    ("finetune:job-create", "get", None, {C, M}, 200, 403),
    ("finetune:job-create", "post", "new-ft-job", {C, M}, 302, 403),
    ("finetune:job-detail", "get", "ft-job", {C, U, M}, 200, 403),
    ("finetune:job-progress", "get", "ft-job", {C, U, M}, 200, 403),
    ("finetune:job-action", "post", "ft-job:resume", {C, M}, 302, 403),   # a pending job: refused on the page
    ("finetune:api-job-list", "get", None, {C, U, M}, 200, 403),
    ("finetune:api-job-list", "post", "new-ft-job", {C, M}, 201, 403),
    ("finetune:api-job-detail", "get", "ft-job", {C, U, M}, 200, 403),
    ("finetune:api-job-action", "post", "ft-job:resume", {C, M}, 409, 403),   # a pending job cannot be resumed
    ("finetune:compare", "get", "compare", {C, U, M}, 400, 403),   # a one-model run: nothing to compare
    ("finetune:api-compare", "get", "compare", {C, U, M}, 400, 403),
    ("api-schema", "get", None, ALL_ROLES, 200, 403),
    ("api-docs", "get", None, ALL_ROLES, 200, 403),
]


@pytest.fixture
def evaluation(content):
    """A scored run of the null baseline on the content's variants."""
    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    endpoint = endpoint_create(name="null-baseline", backend="null", actor=None)
    run = run_create(name="matrix", endpoints=[endpoint], actor=None, split="all", start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING)
    for batch_id in run.batches.values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    return {**content, "run": run, "endpoint": endpoint}


@pytest.fixture
def ls_batch(image_and_batch, curator):
    """A Label Studio annotation batch nobody reads (Label Studio itself is not configured here)."""
    from labelstudio.services import batch_create

    image, _ = image_and_batch
    return {"ls-batch": batch_create(name="matrix batch", images=[image], actor=curator), "image": image}


@pytest.fixture
def adjudication_case(content, users):
    """An open case on the content's item (authored by nobody, so every adjudicator may read it)."""
    from adjudication.models import AdjudicationCase

    item = content["item"]
    case = AdjudicationCase.objects.create(key=f"item:{item.item_key}", item=item, item_key=item.item_key,
                                           image=item.chain.image, stage=item.stage, category=item.category,
                                           rules=",model_consensus,", hits=[], priority=1.0)
    return {**content, "case": case, "reader": users[Role.ADJUDICATOR]}


@pytest.fixture
def shortcut_audit(content):
    """A pending shortcut audit of the content's approved items (its task is never queued here)."""
    from validity.services import shortcut_audit_create

    return {**content, "shortcut-audit": shortcut_audit_create(filters={}, split="test", actor=None)}


@pytest.fixture
def report_content(evaluation, settings):
    """A report of the scored run with a version marked ready over small stand-in files (no rendering)."""
    from common.signing import generate_signing_key
    from reports.models import ReportVersion
    from reports.services import report_create, report_generate

    settings.MEDR2_SIGNING_KEY = generate_signing_key()
    report = report_create(actor=None, title="matrix report", runs=[evaluation["run"]])
    version = report_generate(report=report, actor=None, queue=False)
    ReportVersion.objects.filter(pk=version.pk).update(status="ready", pdf=b"%PDF-1.7 matrix", document_json=b"{}",
                                                       html=b"<!doctype html>", document_hash="d" * 64)
    return {**evaluation, "report": report, "report-version": version}


@pytest.fixture
def ft_job(content, tmp_path):
    """A pending fine-tuning job, never queued (on_commit does not run here), on the content's items moved to
    the train split, from a stand-in model directory (nothing is loaded: job_create reads its config.json)."""
    from annotation.models import Image
    from annotation.splits import split_for_group
    from finetune.services import job_create
    from workers.services.endpoints import endpoint_create

    train = next(g for g in (f"matrix-{i}" for i in range(1000)) if split_for_group(g) == "train")
    Image.objects.filter(pk=content["item"].chain.image_id).update(split_group=train)
    model = tmp_path / "base-vlm"
    model.mkdir()
    (model / "config.json").write_text('{"vision_config": {}}')
    base = endpoint_create(name="matrix-vlm", backend="transformers", parameters={"path": str(model)}, actor=None)
    return {**content, "ft-base": base, "ft-job": job_create(actor=None, base_endpoint=base, recipe="stepwise",
                                                             steps=3, start=False)}


def _content_if_needed(request, kwarg):
    """Chains, items and variants take a second to build: only for the routes that need them."""
    if kwarg and kwarg.split(":")[0] in ("ft-job", "new-ft-job"):
        return request.getfixturevalue("ft_job")
    if kwarg and kwarg.split(":")[0] in ("report", "report-version"):
        return request.getfixturevalue("report_content")
    if kwarg in ("shortcut-audit", "new-shortcut-audit"):
        return request.getfixturevalue("shortcut_audit")
    if kwarg and kwarg.split(":")[0] == "case":
        return request.getfixturevalue("adjudication_case")
    if kwarg and (kwarg.startswith("ls-batch") or kwarg == "new-ls-batch"):
        return request.getfixturevalue("ls_batch")
    if kwarg and kwarg.split(":")[0] in ("run", "new-run", "compare"):
        return request.getfixturevalue("evaluation")
    return request.getfixturevalue("content") if kwarg in ("item", "chain", "variant", "review") else None


def _url(name, kwarg, image, batch, content=None):
    objects = {"image": image, "batch": batch, **(content or {})}
    if kwarg == "case:round-robin":
        return reverse(name)
    if kwarg and kwarg.startswith("report-version:"):
        extra = kwarg.split(":")[1]
        fmt = {"fmt": extra} if extra in ("pdf", "json") else {}
        return reverse(name, kwargs={"pk": objects["report-version"].pk, **fmt})
    if kwarg and kwarg.startswith("export:"):
        return reverse(name, kwargs={"fmt": kwarg.split(":")[1]})
    if kwarg and kwarg.startswith("case:"):
        return reverse(name, kwargs={"pk": objects["case"].pk})
    if kwarg and kwarg.startswith("run:"):
        extra = kwarg.split(":")[1]
        key = "fmt" if extra in ("json", "csv") else "action"
        return reverse(name, kwargs={"pk": objects["run"].pk, key: extra})
    if kwarg == "compare":
        return reverse(name) + f"?run={objects['run'].pk}"
    if kwarg and kwarg.startswith("ft-job:"):
        return reverse(name, kwargs={"pk": objects["ft-job"].pk, "action": kwarg.split(":")[1]})
    if kwarg == "ls-batch:task":
        batch = objects["ls-batch"]
        return reverse(name, kwargs={"pk": batch.pk, "task_pk": batch.tasks.get().pk})
    if kwarg and kwarg.startswith("ls-batch:"):
        return reverse(name, kwargs={"pk": objects["ls-batch"].pk, "action": kwarg.split(":")[1]})
    if kwarg == "category":
        return reverse(name, kwargs={"code": "margin"})
    if kwarg in objects:
        return reverse(name, kwargs={"pk": objects[kwarg].pk})
    return reverse(name)


def _call(client, method, url, n, content=None, kwarg=None):
    if kwarg == "new-endpoint":
        data = {"name": f"model-{n}", "backend": "null", "parameters": "{}", "prompt_template": "{prompt}",
                "box_format": "auto"}
        if url.startswith("/api/"):
            return client.post(url, {**data, "parameters": {}}, content_type="application/json")
        return client.post(url, data)
    if kwarg == "new-run":
        if url.startswith("/api/"):
            return client.post(url, {"name": f"run {n}", "models": [content["endpoint"].name], "split": "all"},
                               content_type="application/json")
        return client.post(url, {"name": f"run {n}", "endpoints": [content["endpoint"].pk], "batch_size": 64,
                                 "split": "all"})
    if kwarg == "new-ft-job":
        if url.startswith("/api/"):
            return client.post(url, {"base_model": content["ft-base"].name, "recipe": "stepwise", "steps": 3},
                               content_type="application/json")
        return client.post(url, {"base_endpoint": content["ft-base"].pk, "recipe": "stepwise", "steps": 3, "seed": 0})
    if kwarg == "new-ls-batch":
        if url.startswith("/api/"):
            return client.post(url, {"name": f"batch {n}", "images": [content["image"].pk], "push": False},
                               content_type="application/json")
        return client.post(url, {"name": f"batch {n}", "source": "images", "limit": 5, "maximum_annotations": 1})
    if kwarg == "new-shortcut-audit":
        if url.startswith("/api/"):
            return client.post(url, {"split": "test"}, content_type="application/json")
        return client.post(url, {"split": "test", "status": "approved"})
    if kwarg == "report-version:sign":   # a wrong password: the board is refused with 400, others never get there
        if url.startswith("/api/"):
            return client.post(url, {"meaning": "author", "password": "wrong"}, content_type="application/json")
        return client.post(url, {"meaning": "author", "password": "wrong"})
    if kwarg == "assign-image":
        from django.contrib.auth import get_user_model

        from annotation.models import Image

        reader = get_user_model().objects.filter(groups__name="annotator").order_by("pk").first().username
        image = Image.objects.order_by("pk").first().pk
        if url.startswith("/api/"):
            return client.post(url, {"user": reader, "images": [image]}, content_type="application/json")
        return client.post(url, {"user": reader, "action": "assign", "ids": str(image)})
    if kwarg == "case:assign":
        return client.post(url, {"reader": content["reader"].pk})
    if kwarg == "case:verdict":
        return client.post(url, {}, content_type="application/json")
    if kwarg == "case:round-robin":
        return client.post(url, {"case_ids": [content["case"].pk]}, content_type="application/json")
    if method == "patch":
        item = content["item"]
        return client.patch(url, {"question": item.question + f" ({n})", "reason": "matrix"},
                            content_type="application/json")
    if method == "post" and "review" in url:
        ids = [content["item"].pk]
        if url.startswith("/api/"):
            return client.post(url, {"ids": ids, "status": "in_review"}, content_type="application/json")
        return client.post(url, {"ids": ids, "status": "in_review", "next": "/items/"})
    if method == "post":
        return client.post(url, {"files": [_upload(n)]})
    return client.get(url)


def _upload(n):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(f"upload-{n}.png", png_bytes(color=(n * 37) % 250 + 1), content_type="image/png")


@pytest.mark.parametrize("name,method,kwarg,allowed,ok_status,denied", PAGES, ids=[f"{p[0]}-{p[1]}" for p in PAGES])
def test_route_by_role(name, method, kwarg, allowed, ok_status, denied, users, image_and_batch, request):
    image, batch = image_and_batch
    content = _content_if_needed(request, kwarg)
    for n, role in enumerate([*Role, None]):
        if method == "patch":  # each edit makes a new current version; edit that one
            from annotation.models import QAItem

            content["item"] = QAItem.objects.get(item_key=content["item"].item_key, is_current=True)
        url = _url(name, kwarg, image, batch, content)
        client = Client()
        client.force_login(users[role])
        response = _call(client, method, url, n, content, kwarg)
        if role in allowed:
            expected = ok_status
        else:
            expected = denied.get(role, 403) if isinstance(denied, dict) else denied
        assert response.status_code == expected, f"{name} as {role}: {response.status_code} != {expected}"


@pytest.mark.parametrize("name,method,kwarg", [(p[0], p[1], p[2]) for p in PAGES],
                         ids=[f"{p[0]}-{p[1]}" for p in PAGES])
def test_anonymous_is_sent_to_login_or_refused(name, method, kwarg, image_and_batch, request):
    image, batch = image_and_batch
    content = _content_if_needed(request, kwarg)
    response = _call(Client(), method, _url(name, kwarg, image, batch, content), 0, content, kwarg)
    if name.split(":")[-1].startswith("api-"):
        assert response.status_code in (401, 403)
    else:
        assert response.status_code == 302
        assert "login" in response["Location"]


def test_assigned_image_becomes_visible_to_an_annotator(users, image_and_batch):
    from annotation.services.images import image_assign

    image, _ = image_and_batch
    annotator = users[Role.ANNOTATOR]
    client = Client()
    client.force_login(annotator)
    assert client.get(reverse("annotation:image-detail", kwargs={"pk": image.pk})).status_code == 404
    assert client.get(reverse("annotation:api-image-list")).json()["count"] == 0
    image_assign(images=[image], user=annotator, actor=users[Role.CURATOR])
    assert client.get(reverse("annotation:image-detail", kwargs={"pk": image.pk})).status_code == 200
    assert client.get(reverse("annotation:image-file", kwargs={"pk": image.pk}))["Content-Type"] == "image/png"
    assert [i["id"] for i in client.get(reverse("annotation:api-image-list")).json()["results"]] == [image.pk]
    # the adjudicator still sees nothing
    other = Client()
    other.force_login(users[Role.ADJUDICATOR])
    assert other.get(reverse("annotation:api-image-list")).json()["count"] == 0


def test_csrf_is_enforced_on_form_posts(users):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users[Role.CURATOR])
    response = client.post(reverse("annotation:image-import"), {"files": [_upload(1)]})
    assert response.status_code == 403
    response = client.post(reverse("annotation:api-image-upload"), {"files": [_upload(2)]})
    assert response.status_code == 403  # session-authenticated API calls need the CSRF token too


def test_token_authenticated_api(users):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=users[Role.AUDITOR])
    client = Client()
    assert client.get(reverse("audit:api-verify"), HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200
    assert client.get(reverse("audit:api-verify"), HTTP_AUTHORIZATION="Token wrong").status_code in (401, 403)


def test_login_and_logout_flow(users):
    client = Client()
    response = client.post(reverse("accounts:login"),
                           {"username": users[Role.CURATOR].username, "password": "pw-Secret-123"})
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:index")
    assert client.get(reverse("dashboard:index")).status_code == 200
    assert client.post(reverse("accounts:logout")).status_code == 302
    assert client.get(reverse("dashboard:index")).status_code == 302
    assert client.cookies.get("medr2_sessionid") is not None


def test_refusal_page_names_the_users_roles(users):
    client = Client()
    client.force_login(users[Role.ANNOTATOR])
    response = client.get(reverse("audit:event-list"))
    assert response.status_code == 403
    assert b"not part of your role" in response.content and b"annotator" in response.content
