"""Pages for Label Studio annotation: the radiologists' worklist, batches with per-radiologist
progress, agreement and the sync log, and the two endpoints Label Studio itself calls (signed
images, webhooks). Thin: parse, call, render."""
from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core import signing
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability, user_can
from annotation import viewer
from annotation.storage import resolve
from common.pagination import page_of
from labelstudio import selectors
from labelstudio.forms import AnnotationBatchForm
from labelstudio.links import label_studio_project_url, label_studio_task_url
from labelstudio.models import AnnotationTask
from labelstudio.services import batch_create, image_id_from_token, webhook_receive
from labelstudio.tasks import push_batch_later, sync_batch_later, sync_tasks_later

PER_PAGE = 50
LOG_PER_PAGE = 20


class WorklistView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_WORKLIST

    def get(self, request):
        page = page_of(request, selectors.batch_list(user=request.user), PER_PAGE)
        return render(request, "labelstudio/worklist.html", {
            "page": page, "can_manage": user_can(request.user, Capability.MANAGE_ANNOTATION),
            "mine": selectors.reader_worklist(user=request.user),
            "sees_agreement": selectors.sees_reader_work(request.user),
            "ls_configured": bool(settings.LABEL_STUDIO_URL), "ls_public_url": settings.LABEL_STUDIO_PUBLIC_URL})


class BatchCreateView(CapabilityRequiredMixin, View):
    required_capability = Capability.MANAGE_ANNOTATION

    def get(self, request):
        return render(request, "labelstudio/batch_new.html", {"form": AnnotationBatchForm()})

    def post(self, request):
        form = AnnotationBatchForm(request.POST)
        if form.is_valid():
            d = form.cleaned_data
            try:
                batch = batch_create(name=d["name"], description=d["description"], actor=request.user,
                                     images=form.selected_images(), qa_items=form.selected_items(),
                                     maximum_annotations=d["maximum_annotations"], readers=d["readers"],
                                     mode=d.get("mode") or "independent")
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                n_tasks = selectors.batch_task_count(batch=batch)
                if d["push_now"]:
                    push_batch_later(batch.pk)
                    messages.success(request, f"Batch created with {n_tasks} task(s); pushing to Label Studio.")
                else:
                    messages.success(request, f"Batch created with {n_tasks} task(s).")
                return redirect("labelstudio:batch-detail", pk=batch.pk)
        return render(request, "labelstudio/batch_new.html", {"form": form}, status=400)


class BatchDetailView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_WORKLIST

    def get(self, request, pk: int):
        batch = selectors.batch_get(user=request.user, pk=pk)
        can_manage = user_can(request.user, Capability.MANAGE_ANNOTATION)
        status = request.GET.get("status", "")
        if status not in ("",) + tuple(AnnotationTask.Status.values):
            status = ""
        disagreement = request.GET.get("disagreement") == "1"
        tasks = selectors.batch_tasks(batch=batch, user=request.user, status=status, disagreement=disagreement)
        page = page_of(request, tasks, PER_PAGE)
        rows = [(task, label_studio_task_url(batch, task)) for task in page]
        sees_agreement = selectors.sees_reader_work(request.user)
        log_page = None
        if can_manage:
            log_page = page_of(request, selectors.batch_sync_log(batch=batch, level=request.GET.get("level", "")),
                               LOG_PER_PAGE, param="log_page")
        return render(request, "labelstudio/batch_detail.html", {
            "batch": batch, "page": page, "rows": rows, "can_manage": can_manage,
            "progress": selectors.batch_reader_progress(batch=batch),
            "agreement": selectors.batch_agreement_summary(batch=batch) if sees_agreement else None,
            "sees_agreement": sees_agreement, "log_page": log_page,
            "status": status, "disagreement": disagreement,
            "statuses": AnnotationTask.Status.values, "ls_configured": bool(settings.LABEL_STUDIO_URL),
            "ls_project_url": label_studio_project_url(batch)})


class TaskDetailView(CapabilityRequiredMixin, View):
    """One task: every radiologist's annotation (boxes over the image, answer, rephrased question,
    rationale, rejected regions, revisions) and the agreement. Curators, auditors and admins only:
    readers stay blind to each other's work."""

    required_capability = Capability.VIEW_ALL_IMAGES

    def get(self, request, pk: int, task_pk: int):
        batch = selectors.batch_get(user=request.user, pk=pk)
        task = selectors.task_get(user=request.user, batch=batch, pk=task_pk)
        annotations = selectors.task_annotations(task=task)
        layers = []
        for n, entry in enumerate(annotations):
            # readers take colours by position (they are people, not models: no endpoint colour)
            style = viewer.model_style(endpoint_id=None, position=n, blinded=True)
            entry["colour"] = style.colour
            if entry["row"].status == "active":
                name = entry["row"].author.username if entry["row"].author else entry["row"].ls_user_email
                layers.append(viewer.model_layer(f"reader-{n}", name, style, boxes=[
                    viewer.box(b.x0, b.y0, b.x1, b.y1, b.label) for b in entry["boxes"] if b.status == "active"]))
        rejected = selectors.task_rejections(batch=batch, task=task)
        config = viewer.image_config(image=task.image, user=request.user, layers=layers,
                                     title=f"Image {task.image_id}")
        return render(request, "labelstudio/task_detail.html", {
            "viewer": config,
            "batch": batch, "task": task, "image": task.image, "annotations": annotations, "rejected": rejected,
            "disagreement": getattr(task, "disagreement", None) if task.has_disagreement else None,
            "ls_url": label_studio_task_url(batch, task)})


class BatchActionView(CapabilityRequiredMixin, View):
    required_capability = Capability.MANAGE_ANNOTATION

    def post(self, request, pk: int, action: str):
        batch = selectors.batch_get(user=request.user, pk=pk)
        if not settings.LABEL_STUDIO_URL:
            messages.error(request, "Label Studio is not configured (LABEL_STUDIO_URL); see docs/labelstudio.md.")
        elif action == "push":
            push_batch_later(batch.pk)
            messages.success(request, "Push queued: the project and every task not yet in Label Studio.")
        elif action in ("sync", "full-sync"):
            if not batch.in_label_studio:
                messages.error(request, "Push the batch first.")
            else:
                sync_batch_later(batch.pk, full=action == "full-sync")
                messages.success(request, "Pull from Label Studio queued.")
        else:
            raise Http404
        return redirect("labelstudio:batch-detail", pk=pk)


class LabelStudioImageView(View):
    """The PNG behind a task, for the Label Studio editor in a radiologist's browser: no session
    (another origin), a signed, expiring token instead, and the CORS headers the editor needs."""

    def get(self, request, token: str):
        try:
            image_id = image_id_from_token(token)
        except signing.SignatureExpired:
            return HttpResponse("this image link has expired; the next sync re-signs it", status=410,
                                content_type="text/plain")
        except (signing.BadSignature, ValueError):
            return HttpResponse("invalid image link", status=403, content_type="text/plain")
        image = selectors.image_find(pk=image_id)
        if image is None:
            raise Http404
        try:
            handle = open(resolve(image.file), "rb")
        except (OSError, ValueError):
            raise Http404("image file missing from storage") from None
        response = FileResponse(handle, content_type="image/png")
        response["Cache-Control"] = "private, max-age=3600"
        _cors(response)
        return response

    def options(self, request, token: str):
        response = HttpResponse(status=204)
        _cors(response)
        response["Access-Control-Allow-Methods"] = "GET, OPTIONS"
        return response


def _cors(response) -> None:
    origin = settings.LABEL_STUDIO_PUBLIC_URL or "*"
    response["Access-Control-Allow-Origin"] = origin
    response["Vary"] = "Origin"
    response["Cross-Origin-Resource-Policy"] = "cross-origin"


@csrf_exempt
def webhook(request):
    """POST /api/labelstudio/webhook/ — called by Label Studio, authenticated by the shared secret
    header (constant-time compare). Answers within Label Studio's 1 s timeout: the pull runs later."""
    if request.method != "POST":
        return JsonResponse({"detail": "POST only"}, status=405)
    outcome = webhook_receive(body=request.body, secret=request.headers.get("X-Medr2-Webhook-Secret"))
    if outcome.status == 202 and outcome.ls_task_ids:
        sync_tasks_later(outcome.ls_task_ids)
    return JsonResponse(outcome.as_dict(), status=outcome.status)
