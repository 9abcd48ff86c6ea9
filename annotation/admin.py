"""Benchmark content in the Django admin. Edits are audited (AuditedModelAdmin); QA items are never
changed here (an edit is a new version, made by annotation.services.qa). Lists select their relations
in the list query, and big foreign keys are raw ids (a select of 110k images would not load)."""
from django import forms
from django.contrib import admin

from annotation import models
from annotation.chains import category_errors
from annotation.services.chains import category_payload
from audit.admin import AuditedModelAdmin, ReadOnlyModelAdmin


@admin.register(models.Stage)
class StageAdmin(AuditedModelAdmin):
    list_display = ("code", "order", "name")


class TaskCategoryAdminForm(forms.ModelForm):
    class Meta:
        model = models.TaskCategory
        fields = "__all__"

    def clean(self):
        data = super().clean()
        if not self.errors:
            names = ("code", "name", "stage", "answer_type", "prompt_template", "alt_templates", "rule")
            candidate = models.TaskCategory(**{f: data.get(f) for f in names})
            problems = category_errors(category_payload(candidate))
            if problems:
                raise forms.ValidationError(problems)
        return data


@admin.register(models.TaskCategory)
class TaskCategoryAdmin(AuditedModelAdmin):
    form = TaskCategoryAdminForm
    list_display = ("code", "name", "stage", "answer_type", "is_active")
    list_filter = ("stage", "answer_type", "is_active")
    list_select_related = ("stage",)
    search_fields = ("code", "name")


@admin.register(models.Image)
class ImageAdmin(AuditedModelAdmin):
    list_display = ("id", "modality", "body_region", "width", "height", "source_format", "split_group", "created_at")
    list_filter = ("modality", "body_region", "source_format")
    search_fields = ("sha256", "split_group")
    readonly_fields = ("sha256", "file", "source_file", "source_sha256", "deid", "width", "height")
    raw_id_fields = ("import_batch", "import_file")
    filter_horizontal = ("assignees",)

    def has_add_permission(self, request) -> bool:
        """Images come from an import (de-identified, decoded, rendered): `/images/import/`, the API or
        `manage.py import_images`, never from a blank admin form."""
        return False


class ImportFileResultInline(admin.TabularInline):
    model = models.ImportFileResult
    extra = 0
    can_delete = False
    readonly_fields = ("position", "name", "status", "code", "message", "images_created", "images_duplicate")


@admin.register(models.ImportBatch)
class ImportBatchAdmin(AuditedModelAdmin):
    list_display = ("id", "source", "source_dataset", "created_by", "created_at", "files_imported", "files_duplicate",
                    "files_failed")
    list_filter = ("source",)
    list_select_related = ("created_by",)
    raw_id_fields = ("created_by",)
    inlines = [ImportFileResultInline]


@admin.register(models.ImportFileResult)
class ImportFileResultAdmin(ReadOnlyModelAdmin):
    """Each imported file's outcome, written only by the importer."""

    list_display = ("id", "name", "batch", "status", "code", "images_created", "images_duplicate")
    list_filter = ("status", "code")
    list_select_related = ("batch",)
    search_fields = ("name", "code")


@admin.register(models.ImportChunk)
class ImportChunkAdmin(ReadOnlyModelAdmin):
    """A parallel import's slices of files (annotation.import_chunk tasks), written only by the importer."""

    list_display = ("id", "batch", "index", "status", "attempts", "started_at", "finished_at")
    list_filter = ("status",)
    list_select_related = ("batch",)


@admin.register(models.Finding)
class FindingAdmin(AuditedModelAdmin):
    list_display = ("id", "image", "kind", "label", "source", "status")
    list_filter = ("kind", "source", "status")
    list_select_related = ("image",)
    search_fields = ("label",)
    raw_id_fields = ("image", "created_by")


@admin.register(models.GroundingBox)
class GroundingBoxAdmin(AuditedModelAdmin):
    list_display = ("id", "image", "label", "x0", "y0", "x1", "y1", "source", "status")
    list_filter = ("source", "status")
    list_select_related = ("image",)
    search_fields = ("label",)
    raw_id_fields = ("finding", "image", "author")


@admin.register(models.Chain)
class ChainAdmin(AuditedModelAdmin):
    list_display = ("id", "image", "seed", "created_at")
    list_select_related = ("image",)
    raw_id_fields = ("image", "created_by")


@admin.register(models.QAItem)
class QAItemAdmin(AuditedModelAdmin):
    list_display = ("id", "item_key", "version", "is_current", "stage", "category", "status")
    list_filter = ("stage", "category", "status", "is_current")
    list_select_related = ("stage", "category")
    search_fields = ("question", "item_key")
    readonly_fields = ("item_key", "version", "is_current", "previous", "content_hash")
    raw_id_fields = ("chain", "evidence_boxes", "created_by")

    def has_change_permission(self, request, obj=None):
        return False  # edits make new versions through annotation.services.qa, never in place


@admin.register(models.Variant)
class VariantAdmin(AuditedModelAdmin):
    list_display = ("id", "item", "kind", "seed")
    list_filter = ("kind",)
    list_select_related = ("item",)
    raw_id_fields = ("item", "parent")
