"""Models, runs, batches and predictions in the Django admin. Endpoints are edited here (audited);
runs, batches and predictions are written only by workers.services: visible, never edited."""
from django.contrib import admin

from audit.admin import (
    AuditedModelAdmin,
    ReadOnlyModelAdmin as ReadOnlyAdmin,  # runs, batches, predictions: services only
)

from .models import EvaluationRun, ModelEndpoint, Prediction, RunBatch, template_hash


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(AuditedModelAdmin):
    list_display = ("name", "display_name", "backend", "queue", "box_format", "is_active", "created_at")
    list_filter = ("backend", "queue", "is_active")
    search_fields = ("name", "display_name")
    readonly_fields = ("prompt_template_hash",)
    raw_id_fields = ("created_by",)

    def save_model(self, request, obj, form, change):
        obj.prompt_template_hash = template_hash(obj.prompt_template)
        super().save_model(request, obj, form, change)


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "status", "split", "n_variants", "total", "is_reference", "created_by", "created_at",
                    "finished_at")
    list_filter = ("status", "split", "is_reference")
    list_select_related = ("created_by",)
    search_fields = ("name",)
    date_hierarchy = "created_at"


@admin.register(RunBatch)
class RunBatchAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "endpoint", "index", "size", "status", "attempts", "n_done", "n_errors")
    list_filter = ("status",)
    list_select_related = ("run", "endpoint")
    raw_id_fields = ("run", "endpoint")


@admin.register(Prediction)
class PredictionAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "endpoint", "variant", "outcome", "parse_method", "correct", "iou")
    list_filter = ("outcome", "correct")
    # the list shows run, model and variant: join those three only (a bare select_related() would follow
    # every foreign key down to the image, and none would mean one query per row)
    list_select_related = ("run", "endpoint", "variant")
    raw_id_fields = ("run", "endpoint", "variant", "item")
