"""Django admin: the audit trail is read-only; every other model admin writes audit events (the user, role
group and API token admins too: they are registered here, since accounts sits below the audit trail and never
imports it). `tests/audit/test_admin_audited.py` walks every registered model admin."""
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.forms.models import model_to_dict
from rest_framework.authtoken.admin import TokenAdmin
from rest_framework.authtoken.models import Token, TokenProxy

from accounts.roles import Role
from accounts.signals import announced

from .models import AuditCheckpoint, AuditEvent, AuditEventObject
from .services import audit_record

SECRET_FIELDS = {"password"}
ROLE_NAMES = frozenset(r.value for r in Role)

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
    plain = {k: _jsonish(v) for k, v in model_to_dict(obj).items() if k not in SECRET_FIELDS}
    if isinstance(obj, Token):          # the key is the credential: a token is named by its user
        plain.pop("key", None)
    elif isinstance(obj, Group) and obj.pk:
        plain["members"] = sorted(obj.user_set.values_list("username", flat=True))
    elif isinstance(obj, get_user_model()) and obj.pk:
        plain["groups"] = sorted(obj.groups.values_list("name", flat=True))
    return plain


class AuditedModelAdmin(admin.ModelAdmin):
    """Edits made in Django admin land in the audit trail, in the admin's transaction: one event per save or
    delete (`admin.<app>.<model>.<verb>`); the row-level account watchers (audit/auth_events.py) stay quiet."""

    def _before(self, obj):
        return _plain(type(obj)._default_manager.get(pk=obj.pk))

    def save_model(self, request, obj, form, change):
        request._medr2_audit_before = self._before(obj) if change and obj.pk else None
        with announced():
            super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        # after many-to-many fields (e.g. a user's role groups) are saved
        with announced():
            super().save_related(request, form, formsets, change)
        obj = form.instance
        verb = "change" if change else "create"
        audit_record(actor=request.user, action=f"admin.{obj._meta.label_lower}.{verb}", target=obj,
                     before=getattr(request, "_medr2_audit_before", None), after=_plain(obj))

    def delete_model(self, request, obj):
        before = _plain(obj)
        pk = obj.pk
        with announced():
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


admin.site.unregister(Group)


@admin.register(Group)
class AuditedGroupAdmin(AuditedModelAdmin, GroupAdmin):
    """Role groups: audited like every edit here. The five role groups (accounts/roles.py) keep their names and
    cannot be deleted: a role is the group of that name, so renaming `auditor` would silently take the audit
    role from everyone in it."""

    def get_readonly_fields(self, request, obj=None):
        readonly = tuple(super().get_readonly_fields(request, obj))
        return (*readonly, "name") if obj is not None and obj.name in ROLE_NAMES else readonly

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.name in ROLE_NAMES:
            return False
        return super().has_delete_permission(request, obj)


admin.site.unregister(TokenProxy)


@admin.register(TokenProxy)
class AuditedTokenAdmin(AuditedModelAdmin, TokenAdmin):
    """API tokens: created, moved and revoked here are audited under their user's id (`authtoken.tokenproxy`);
    the key itself never enters the trail."""

    def _before(self, obj):
        return _plain(Token.objects.get(key=obj.key))
