from django import forms
from django.contrib import admin

from annotation import models
from annotation.chains import category_errors
from annotation.services.chains import category_payload
from audit.admin import AuditedModelAdmin


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


@admin.register(models.Image)
class ImageAdmin(AuditedModelAdmin):
    list_display = ("id", "modality", "body_region", "width", "height", "source_format", "split_group", "created_at")
    list_filter = ("modality", "body_region", "source_format")
    search_fields = ("sha256", "split_group")
    readonly_fields = ("sha256", "file", "source_file", "source_sha256", "deid", "width", "height")
    filter_horizontal = ("assignees",)


class ImportFileResultInline(admin.TabularInline):
    model = models.ImportFileResult
    extra = 0
    can_delete = False
    readonly_fields = ("name", "status", "code", "message", "images_created", "images_duplicate")


@admin.register(models.ImportBatch)
class ImportBatchAdmin(AuditedModelAdmin):
    list_display = ("id", "source", "created_by", "created_at", "files_imported", "files_duplicate", "files_failed")
    inlines = [ImportFileResultInline]


@admin.register(models.Finding)
class FindingAdmin(AuditedModelAdmin):
    list_display = ("id", "image", "kind", "label", "source", "status")
    list_filter = ("kind", "source", "status")


@admin.register(models.GroundingBox)
class GroundingBoxAdmin(AuditedModelAdmin):
    list_display = ("id", "image", "label", "x0", "y0", "x1", "y1", "source", "status")
    list_filter = ("source", "status")


@admin.register(models.Chain)
class ChainAdmin(AuditedModelAdmin):
    list_display = ("id", "image", "seed", "created_at")


@admin.register(models.QAItem)
class QAItemAdmin(AuditedModelAdmin):
    list_display = ("id", "item_key", "version", "is_current", "stage", "category", "status")
    list_filter = ("stage", "category", "status", "is_current")
    readonly_fields = ("item_key", "version", "is_current", "previous", "content_hash")

    def has_change_permission(self, request, obj=None):
        return False  # edits make new versions through annotation.services.qa, never in place


@admin.register(models.Variant)
class VariantAdmin(AuditedModelAdmin):
    list_display = ("id", "item", "kind", "seed")
    list_filter = ("kind",)
