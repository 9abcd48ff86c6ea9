"""Label Studio rows in the Django admin: read-only (written only by labelstudio.services)."""
from django.contrib import admin

from audit.admin import ReadOnlyModelAdmin

from .models import AnnotationBatch, AnnotationTask, AnnotatorDisagreement, LabelStudioAnnotation, SyncLogEntry


@admin.register(AnnotationBatch)
class AnnotationBatchAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "name", "status", "with_qa", "maximum_annotations", "ls_project_id", "last_sync_at",
                    "last_sync_ok")
    list_filter = ("status", "with_qa")


@admin.register(AnnotationTask)
class AnnotationTaskAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "batch", "image", "qa_item", "ls_task_id", "status", "n_annotations", "has_disagreement")
    list_filter = ("status", "has_disagreement")
    raw_id_fields = ("batch", "image", "qa_item")


@admin.register(LabelStudioAnnotation)
class LabelStudioAnnotationAdmin(ReadOnlyModelAdmin):
    list_display = ("ls_annotation_id", "task", "author", "ls_user_email", "status", "revision", "n_regions",
                    "n_rejected", "was_cancelled")
    list_filter = ("status", "was_cancelled")
    raw_id_fields = ("task", "author")


@admin.register(AnnotatorDisagreement)
class AnnotatorDisagreementAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "task", "image", "qa_item", "kinds", "status", "updated_at")
    list_filter = ("status",)
    raw_id_fields = ("task", "image", "qa_item")


@admin.register(SyncLogEntry)
class SyncLogEntryAdmin(ReadOnlyModelAdmin):
    list_display = ("created_at", "batch", "direction", "level", "code", "ls_task_id", "ls_annotation_id")
    list_filter = ("direction", "level", "code")
