"""Label Studio rows in the Django admin: read-only (written only by labelstudio.services)."""
from django.contrib import admin

from audit.admin import ReadOnlyModelAdmin

from .models import (
    AnnotationBatch,
    AnnotationTask,
    AnnotatorDisagreement,
    LabelStudioAnnotation,
    ReaderProject,
    ReaderTask,
    ReaderWorkspace,
    SyncLogEntry,
    WebhookDelivery,
)


@admin.register(AnnotationBatch)
class AnnotationBatchAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "name", "status", "mode", "per_reader", "with_qa", "maximum_annotations", "ls_project_id",
                    "last_sync_at", "last_sync_ok", "created_by")
    list_filter = ("status", "mode", "per_reader", "with_qa")
    list_select_related = ("created_by",)
    search_fields = ("name",)


@admin.register(AnnotationTask)
class AnnotationTaskAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "batch", "image", "qa_item", "ls_task_id", "status", "n_annotations", "has_disagreement")
    list_filter = ("status", "has_disagreement")
    list_select_related = ("batch", "image", "qa_item")
    raw_id_fields = ("batch", "image", "qa_item")


@admin.register(LabelStudioAnnotation)
class LabelStudioAnnotationAdmin(ReadOnlyModelAdmin):
    list_display = ("ls_annotation_id", "task", "author", "ls_user_email", "status", "revision", "n_regions",
                    "n_rejected", "was_cancelled")
    list_filter = ("status", "was_cancelled")
    list_select_related = ("task", "author")
    raw_id_fields = ("task", "author")


@admin.register(AnnotatorDisagreement)
class AnnotatorDisagreementAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "task", "image", "qa_item", "kinds", "status", "updated_at")
    list_filter = ("status",)
    list_select_related = ("task", "image", "qa_item")
    raw_id_fields = ("task", "image", "qa_item")


@admin.register(SyncLogEntry)
class SyncLogEntryAdmin(ReadOnlyModelAdmin):
    list_display = ("created_at", "batch", "direction", "level", "code", "ls_task_id", "ls_annotation_id")
    list_filter = ("direction", "level", "code")
    list_select_related = ("batch",)
    raw_id_fields = ("batch",)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyModelAdmin):
    """Webhook bodies already seen (by SHA-256): a replay is acknowledged and ignored."""

    list_display = ("received_at", "action", "body_sha256")
    list_filter = ("action",)
    search_fields = ("body_sha256",)


@admin.register(ReaderWorkspace)
class ReaderWorkspaceAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "reader", "ls_email", "ls_user_id", "ls_organization_id", "created_at")
    exclude = ("ls_token",)          # the service account's API token is a secret
    list_select_related = ("reader",)


@admin.register(ReaderProject)
class ReaderProjectAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "batch", "reader", "ls_project_id", "synced_until")
    list_select_related = ("batch", "reader")
    raw_id_fields = ("batch", "reader", "workspace")


@admin.register(ReaderTask)
class ReaderTaskAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "task", "reader_project", "ls_task_id")
    list_select_related = ("task", "reader_project")
    raw_id_fields = ("task", "reader_project")
