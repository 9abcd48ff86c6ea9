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
    readonly_fields = ("prompt_template_hash",)

    def save_model(self, request, obj, form, change):
        obj.prompt_template_hash = template_hash(obj.prompt_template)
        super().save_model(request, obj, form, change)


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "status", "n_variants", "total", "created_at", "finished_at")
    list_filter = ("status",)


@admin.register(RunBatch)
class RunBatchAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "endpoint", "index", "size", "status", "attempts", "n_done", "n_errors")
    list_filter = ("status",)


@admin.register(Prediction)
class PredictionAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "endpoint", "variant", "outcome", "parse_method", "correct", "iou")
    list_filter = ("outcome", "correct")
    raw_id_fields = ("run", "endpoint", "variant", "item")
