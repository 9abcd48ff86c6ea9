"""Adjudication rows in the Django admin: read-only (cases, readings and rescores are written only by
adjudication.services, with their audit events)."""
from django.contrib import admin

from audit.admin import ReadOnlyModelAdmin

from .models import AdjudicationCase, CaseReading, PredictionRescore


class CaseReadingInline(admin.TabularInline):
    model = CaseReading
    fk_name = "case"
    extra = 0
    can_delete = False
    fields = ("reader", "role", "status", "verdict", "assigned_by", "assigned_at", "submitted_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(AdjudicationCase)
class AdjudicationCaseAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "key", "status", "priority", "rules", "stage", "category", "modality", "outcome",
                    "resolved_by", "updated_at")
    list_filter = ("status", "outcome", "double_read", "stage", "modality")
    list_select_related = ("stage", "category", "resolved_by")
    search_fields = ("key", "rules")
    raw_id_fields = ("item", "image", "result_item", "resolved_by")
    inlines = [CaseReadingInline]


@admin.register(CaseReading)
class CaseReadingAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "case", "reader", "role", "status", "verdict", "assigned_by", "assigned_at", "submitted_at")
    list_filter = ("role", "status", "verdict")
    list_select_related = ("case", "reader", "assigned_by")
    search_fields = ("reader__username",)
    raw_id_fields = ("case", "reader", "assigned_by")


@admin.register(PredictionRescore)
class PredictionRescoreAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "prediction", "gold_item", "correct_before", "correct_after", "iou_before", "iou_after",
                    "case", "created_at")
    list_filter = ("correct_before", "correct_after")
    list_select_related = ("prediction", "gold_item", "case")
    raw_id_fields = ("prediction", "gold_item", "case")
