"""Shortcut audits in the Django admin: read-only (written only by validity.services)."""
from django.contrib import admin

from audit.admin import ReadOnlyModelAdmin

from .models import ShortcutAudit, ShortcutAuditItem


@admin.register(ShortcutAudit)
class ShortcutAuditAdmin(ReadOnlyModelAdmin):
    list_display = ("seq", "status", "split", "item_count", "created_by", "created_at", "finished_at")
    list_filter = ("status", "split")
    list_select_related = ("created_by",)
    raw_id_fields = ("created_by",)


@admin.register(ShortcutAuditItem)
class ShortcutAuditItemAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "audit", "item", "split", "correct_mask", "image_necessary")
    list_filter = ("split", "image_necessary")
    list_select_related = ("audit", "item")
    raw_id_fields = ("audit", "item")
