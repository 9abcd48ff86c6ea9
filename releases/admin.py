"""Releases in the Django admin: read-only (drafted, built and published only by releases.services;
a published release never changes)."""
from django.contrib import admin

from audit.admin import ReadOnlyModelAdmin

from .models import Release, ReleaseItem


@admin.register(Release)
class ReleaseAdmin(ReadOnlyModelAdmin):
    list_display = ("version", "name", "status", "previous", "bump", "created_by", "created_at", "published_at")
    list_filter = ("status", "bump")
    list_select_related = ("previous", "created_by")
    search_fields = ("version", "name", "title")
    raw_id_fields = ("previous", "created_by", "published_by")


@admin.register(ReleaseItem)
class ReleaseItemAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "release", "item", "item_version", "split", "included_anyway")
    list_filter = ("split",)
    list_select_related = ("release", "item")
    search_fields = ("item_key",)
    raw_id_fields = ("release", "item")
