"""Server-rendered pages. Thin: parse input, call a selector or service, render."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability, user_can

from . import selectors
from .models import ImportBatch
from .services.images import BytesSource, ImportDefaults, images_import
from .storage import png_response

IMAGES_PER_PAGE = 24


class DashboardView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_DASHBOARD

    def get(self, request):
        waiting = None
        if user_can(request.user, Capability.ADJUDICATE):
            from .adjudication.selectors import cases_waiting_for

            waiting = cases_waiting_for(user=request.user)
        return render(request, "annotation/dashboard.html", {
            "counts": selectors.dashboard_counts(user=request.user), "waiting": waiting})


class ImageListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_IMAGES

    def get(self, request):
        filters = {k: request.GET.get(k, "") for k in (*selectors.IMAGE_FILTERS, "has_findings")}
        page = Paginator(selectors.image_list(user=request.user, filters=filters), IMAGES_PER_PAGE).get_page(
            request.GET.get("page")
        )
        query = request.GET.copy()
        query.pop("page", None)
        return render(request, "annotation/image_list.html", {
            "page": page, "filters": filters,
            "choices": [
                (name, name.replace("_", " ").capitalize(), values, filters.get(name, ""))
                for name, values in selectors.image_filter_choices(user=request.user).items()
            ],
            "query": query.urlencode(),
        })


class ImageDetailView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_IMAGES

    def get(self, request, pk: int):
        image = selectors.image_get(user=request.user, pk=pk)
        # box labels are drawn in image pixels; keep them readable whatever the image size
        label_px = round(max(image.width, image.height) / 45, 1)
        return render(request, "annotation/image_detail.html", {"image": image, "label_px": label_px})


class ImageFileView(CapabilityRequiredMixin, View):
    """The rendered PNG, only for users who may see the image."""

    required_capability = Capability.VIEW_IMAGES

    def get(self, request, pk: int):
        return png_response(selectors.image_get(user=request.user, pk=pk).file)


class ImportView(CapabilityRequiredMixin, View):
    """Upload form for curators; the same service as `manage.py import_images` and the API."""

    required_capability = Capability.IMPORT_IMAGES

    def get(self, request):
        batches = selectors.import_batch_list(user=request.user)[:20]
        return render(request, "annotation/import.html", {"batches": batches})

    def post(self, request):
        files = request.FILES.getlist("files")
        if not files:
            messages.error(request, "Choose at least one file to import.")
            return redirect("image-import")
        defaults = ImportDefaults(
            source_dataset=request.POST.get("source_dataset", "")[:200],
            license=request.POST.get("license", "")[:200],
            modality=request.POST.get("modality", "")[:16],
            body_region=request.POST.get("body_region", "")[:64],
        )
        batch = images_import(
            sources=(BytesSource(f.name, f.read()) for f in files), actor=request.user,
            source=ImportBatch.Source.UPLOAD, defaults=defaults,
        )
        return redirect("import-batch", pk=batch.pk)


class ImportBatchView(CapabilityRequiredMixin, View):
    required_capability = Capability.IMPORT_IMAGES

    def get(self, request, pk: int):
        batch = get_object_or_404(selectors.import_batch_list(user=request.user), pk=pk)
        return render(request, "annotation/import_batch.html", {"batch": batch, "files": batch.files.all()})
