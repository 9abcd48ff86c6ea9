from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from audit.admin import AuditedModelAdmin

User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class AuditedUserAdmin(AuditedModelAdmin, UserAdmin):
    """User changes (including role groups) made in Django admin are audited; the password
    hash never enters the trail."""
