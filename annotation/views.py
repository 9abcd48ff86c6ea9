"""Pages for the benchmark content: images and their import, QA items (filters, bulk review),
chains, item versions and variants, and task categories. Thin: selectors read, services write."""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability, user_can
from accounts.selectors import user_find
from annotation import selectors, viewer
from annotation.forms import CategoryCreateForm, CategoryEditForm, ImageAssignForm, ItemEditForm
from annotation.services.assignment import images_assignment_change
from annotation.services.images import ImportDefaults
from annotation.services.ingest_parallel import images_upload_queued
from annotation.services.qa import qa_item_revise, qa_items_review
from annotation.services.taxonomy import category_create, category_update
from annotation.services.variants import variant_image_path
from annotation.storage import png_response
from common.formatting import plural
from common.pagination import page_of

IMAGES_PER_PAGE = 24


class ImageListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_IMAGES

    def get(self, request):
        filters = {k: request.GET.get(k, "") for k in (*selectors.IMAGE_FILTERS, "has_findings")}
        # one card per series (a volume's slices, a multi-frame file's frames), opening its middle slice
        page = page_of(request, selectors.image_series_list(user=request.user, filters=filters), IMAGES_PER_PAGE)
        page.object_list = selectors.image_series_cards(user=request.user, rows=page.object_list)
        return render(request, "annotation/image_list.html", {
            "page": page, "filters": filters,
            "choices": [
                (name, name.replace("_", " ").capitalize(), values, filters.get(name, ""))
                for name, values in selectors.image_filter_choices(user=request.user).items()
            ],
        })


class ImageDetailView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_IMAGES

    def get(self, request, pk: int):
        image = selectors.image_get(user=request.user, pk=pk)
        # annotators read blind: no box layers at all (an empty "Gold (0)" would read as "no lesion")
        layers = viewer.gold_layers(image.active_boxes) if selectors.gold_visible_to(request.user) else []
        config = viewer.image_config(image=image, user=request.user, layers=layers, series=True)
        return render(request, "annotation/image_detail.html", {"image": image, "viewer": config})


class ImageFileView(CapabilityRequiredMixin, View):
    """The rendered PNG, only for users who may see the image."""

    required_capability = Capability.VIEW_IMAGES

    def get(self, request, pk: int):
        return png_response(selectors.image_get(user=request.user, pk=pk).file)


class ImagePixelsView(CapabilityRequiredMixin, View):
    """The frame's stored values for the viewer's window/level (docs/viewer.md), for users who may see
    the image; a JSON error (404/422) when the source is missing or unusable."""

    required_capability = Capability.VIEW_IMAGES

    def get(self, request, pk: int):
        return viewer.pixels_response(selectors.image_get(user=request.user, pk=pk))


class ImageAssignView(CapabilityRequiredMixin, View):
    """Curators give readers (annotators, adjudicators) their images, or take them away: the same service
    as `POST /api/images/assignments/`."""

    required_capability = Capability.ASSIGN_IMAGES

    def _form(self, request, data=None):
        return ImageAssignForm(data, readers=selectors.readers_with_assignments(),
                               choices=selectors.image_filter_choices(user=request.user),
                               initial={"user": request.GET.get("user", "")})

    def get(self, request):
        return render(request, "annotation/image_assign.html",
                      {"form": self._form(request), "readers": selectors.readers_with_assignments()})

    def post(self, request):
        form = self._form(request, request.POST)
        if form.is_valid():
            d = form.cleaned_data
            reader = user_find(username=d["user"])
            images = selectors.images_to_assign(filters=form.filters(), ids=d["ids"])
            try:
                n = images_assignment_change(reader=reader, images=images, assign=d["action"] == "assign",
                                             actor=request.user)
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                done = "assigned to" if d["action"] == "assign" else "taken from"
                messages.success(request, f"{plural(n, 'image')} {done} {reader.get_username()}.")
                return redirect(f"{reverse('annotation:image-assign')}?user={reader.get_username()}")
        return render(request, "annotation/image_assign.html",
                      {"form": form, "readers": selectors.readers_with_assignments()}, status=400)


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
            return redirect("annotation:image-import")
        defaults = ImportDefaults(
            source_dataset=request.POST.get("source_dataset", "")[:200],
            license=request.POST.get("license", "")[:200],
            modality=request.POST.get("modality", "")[:16],
            body_region=request.POST.get("body_region", "")[:64],
        )
        batch = images_upload_queued(files=files, actor=request.user, defaults=defaults)
        return redirect("annotation:import-batch", pk=batch.pk)


class ImportBatchView(CapabilityRequiredMixin, View):
    required_capability = Capability.IMPORT_IMAGES

    def get(self, request, pk: int):
        batch = selectors.import_batch_get(user=request.user, pk=pk)
        status = request.GET.get("status", "")
        status = status if status in selectors.IMPORT_FILE_STATUSES else ""
        page = page_of(request, selectors.import_batch_files(batch=batch, status=status), capped=True,
                       known_count=selectors.import_batch_file_count(batch=batch, status=status))
        return render(request, "annotation/import_batch.html", {"batch": batch, "page": page, "status": status})


class ImportBatchProgressView(CapabilityRequiredMixin, View):
    """The batch's progress as JSON (the shape `static/js/job_progress.js` polls), while it imports."""

    required_capability = Capability.IMPORT_IMAGES

    def get(self, request, pk: int):
        batch = selectors.import_batch_get(user=request.user, pk=pk)
        running = batch.finished_at is None
        return JsonResponse({
            "status": "importing" if running else "finished", "done": batch.files_done,
            "total": batch.files_total or 0, "error": "",
            "step": (f"{plural(batch.files_imported, 'file')} imported, {batch.files_duplicate} duplicate, "
                     f"{batch.files_failed} rejected"),
            "files_total": batch.files_total, "files_done": batch.files_done, "files_imported": batch.files_imported,
            "files_duplicate": batch.files_duplicate, "files_failed": batch.files_failed,
            "images_created": batch.images_created, "finished": batch.finished_at is not None,
        })


ITEMS_PER_PAGE = 50


class ItemListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_ITEMS

    def get(self, request):
        filters = {k: request.GET.get(k, "") for k in (*selectors.ITEM_FILTERS, "chain")}
        page = page_of(request, selectors.item_list(user=request.user, filters=filters), ITEMS_PER_PAGE)
        return render(request, "annotation/item_list.html", {
            "page": page, "filters": filters, "choices": selectors.item_filter_choices(),
            "modalities": selectors.image_filter_choices(user=request.user)["modality"],
            "can_edit": user_can(request.user, Capability.EDIT_ITEMS),
        })


class ItemReviewView(CapabilityRequiredMixin, View):
    """POST ids + status: approve / reject / send back, one item or a whole page."""

    required_capability = Capability.EDIT_ITEMS

    def post(self, request):
        ids = request.POST.getlist("ids")
        status = request.POST.get("status", "")
        back = request.POST.get("next") or reverse("annotation:item-list")
        if not ids:   # never "everything": an empty selection changes nothing
            messages.error(request, "Nothing was checked, so nothing was approved or rejected: tick the items first.")
            return redirect(back if back.startswith("/") else reverse("annotation:item-list"))
        try:
            changed = qa_items_review(item_ids=ids, status=status, actor=request.user,
                                      note=request.POST.get("note", ""))
        except (ValidationError, ValueError) as exc:
            messages.error(request, "; ".join(getattr(exc, "messages", [str(exc)])))
            return redirect(back)
        messages.success(request, f"{plural(changed, 'item')} set to {status.replace('_', ' ')}.")
        return redirect(back if back.startswith("/") else reverse("annotation:item-list"))


class ChainDetailView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_ITEMS

    def get(self, request, pk: int):
        chain = selectors.chain_get(user=request.user, pk=pk)
        image = selectors.image_get(user=request.user, pk=chain.image_id)
        items = list(selectors.chain_items(chain=chain, user=request.user))
        evidence_ids = {b.pk for item in items for b in item.evidence_boxes.all()}
        return render(request, "annotation/chain_detail.html", {
            "chain": chain, "image": image, "items": items, "evidence_ids": evidence_ids,
            "viewer": viewer.chain_config(image=image, evidence_ids=evidence_ids, user=request.user),
            "can_edit": user_can(request.user, Capability.EDIT_ITEMS),
        })


class ItemDetailView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_ITEMS

    def get(self, request, pk: int):
        item = selectors.item_get(user=request.user, pk=pk)
        return render(request, "annotation/item_detail.html", {
            "item": item, "versions": selectors.item_versions(item=item),
            "viewer": viewer.item_config(item=item, user=request.user),
            "variants": selectors.variant_list(item=item),
            "can_edit": user_can(request.user, Capability.EDIT_ITEMS) and item.is_current,
        })


class ItemEditView(CapabilityRequiredMixin, View):
    required_capability = Capability.EDIT_ITEMS

    def get(self, request, pk: int):
        item = selectors.item_get(user=request.user, pk=pk)
        return render(request, "annotation/item_edit.html", {
            "item": item, "form": ItemEditForm(item=item),
            "viewer": viewer.item_config(item=item, user=request.user, edit=True)})

    def post(self, request, pk: int):
        item = selectors.item_get(user=request.user, pk=pk)
        form = ItemEditForm(request.POST, item=item)
        if form.is_valid():
            try:
                new = qa_item_revise(item=item, actor=request.user, reason=form.cleaned_data["reason"],
                                     **form.changes())
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, f"Saved as version {new.version}; version {item.version} is kept.")
                return redirect("annotation:item-detail", pk=new.pk)
        return render(request, "annotation/item_edit.html", {
            "item": item, "form": form, "viewer": viewer.item_config(item=item, user=request.user, edit=True)},
            status=400)


class VariantImageView(CapabilityRequiredMixin, View):
    """The image a model sees for a variant, rendered from its recipe on first request."""

    required_capability = Capability.VIEW_ITEMS

    def get(self, request, pk: int):
        return png_response(variant_image_path(selectors.variant_get(user=request.user, pk=pk)))


class CategoryListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_DASHBOARD

    def get(self, request):
        return render(request, "annotation/category_list.html", {
            "categories": selectors.category_list(), "can_edit": user_can(request.user, Capability.EDIT_TAXONOMY)})


class CategoryEditView(CapabilityRequiredMixin, View):
    required_capability = Capability.EDIT_TAXONOMY

    def get(self, request, code: str):
        category = selectors.category_get(code=code)
        return render(request, "annotation/category_edit.html",
                      {"category": category, "form": CategoryEditForm(instance=category)})

    def post(self, request, code: str):
        category = selectors.category_get(code=code)
        # the form gets its own copy: a failed validation must not change what the page shows as saved
        form = CategoryEditForm(request.POST, instance=selectors.category_get(code=code))
        if form.is_valid():
            category_update(category=category, actor=request.user,
                            **{f: form.cleaned_data[f] for f in CategoryEditForm.Meta.fields})
            messages.success(request, f"Category {category.code} saved.")
            return redirect("annotation:category-list")
        return render(request, "annotation/category_edit.html", {"category": category, "form": form}, status=400)


class CategoryCreateView(CapabilityRequiredMixin, View):
    required_capability = Capability.EDIT_TAXONOMY

    def get(self, request):
        return render(request, "annotation/category_edit.html", {"category": None, "form": CategoryCreateForm()})

    def post(self, request):
        form = CategoryCreateForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            category = category_create(actor=request.user, code=data["code"], stage=data["stage"],
                                       answer_type=data["answer_type"],
                                       **{f: data[f] for f in CategoryEditForm.Meta.fields})
            messages.success(request, f"Category {category.code} created; the next generated chains can use it.")
            return redirect("annotation:category-list")
        return render(request, "annotation/category_edit.html", {"category": None, "form": form}, status=400)
