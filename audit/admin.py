"""Django admin: the audit trail is read-only; every other model admin writes audit events (the user
admin too: it is registered here, since accounts sits below the audit trail and never imports it)."""
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.forms.models import model_to_dict

from .models import AuditCheckpoint, AuditEvent, AuditEventObject
from .services import audit_record

SECRET_FIELDS = {"password"}

# the one admin site names the platform (every app's admin registers on it)
admin.site.site_header = "Med-R2 Studio administration"
admin.site.site_title = "Med-R2 Studio administration"
admin.site.index_title = "Every model, by app"


def _jsonish(value):
    if isinstance(value, (str, int, float, bool, type(None), dict)):
        return value
    if isinstance(value, (list, tuple, set)):  # many-to-many: model instances -> primary keys
        return sorted(getattr(v, "pk", v) for v in value)
    return str(value)


def _plain(obj) -> dict:
    return {k: _jsonish(v) for k, v in model_to_dict(obj).items() if k not in SECRET_FIELDS}


class AuditedModelAdmin(admin.ModelAdmin):
    """Edits made in Django admin land in the audit trail, in the admin's transaction."""

    def save_model(self, request, obj, form, change):
        request._medr2_audit_before = _plain(type(obj).objects.get(pk=obj.pk)) if change and obj.pk else None
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        # after many-to-many fields (e.g. a user's role groups) are saved
        super().save_related(request, form, formsets, change)
        obj = form.instance
        verb = "change" if change else "create"
        audit_record(actor=request.user, action=f"admin.{obj._meta.label_lower}.{verb}", target=obj,
                     before=getattr(request, "_medr2_audit_before", None), after=_plain(obj))

    def delete_model(self, request, obj):
        before = _plain(obj)
        pk = obj.pk
        super().delete_model(request, obj)
        audit_record(actor=request.user, action=f"admin.{obj._meta.label_lower}.delete",
                     object_type=obj._meta.label_lower, object_id=pk, before=before)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.delete_model(request, obj)


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """Rows written only by services (the audit trail, evaluation runs): visible, never edited here."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyModelAdmin):
    list_display = ("seq", "created_at", "actor_name", "action", "object_type", "object_id")
    list_filter = ("action",)
    search_fields = ("action", "actor_name", "object_id")
    readonly_fields = [f.name for f in AuditEvent._meta.fields]


@admin.register(AuditEventObject)
class AuditEventObjectAdmin(ReadOnlyModelAdmin):
    """The objects a bulk event touched besides its own (the indexed copy of its hashed list)."""

    list_display = ("id", "event", "object_type", "object_id")
    list_select_related = ("event",)
    search_fields = ("object_type", "object_id")
    readonly_fields = [f.name for f in AuditEventObject._meta.fields]


@admin.register(AuditCheckpoint)
class AuditCheckpointAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "seq", "created_at", "reason", "public_key")
    readonly_fields = [f.name for f in AuditCheckpoint._meta.fields]


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class AuditedUserAdmin(AuditedModelAdmin, UserAdmin):
    """User changes (including role groups) made in Django admin are audited; the password
    hash never enters the trail."""
