"""Role checks for views (mixin) and DRF APIs (permission class)."""
from __future__ import annotations

from django.contrib.auth.mixins import AccessMixin
from rest_framework.permissions import BasePermission

from .roles import Capability, roles_with, user_can, user_roles


class CapabilityRequiredMixin(AccessMixin):
    """Anonymous users go to the login page; logged-in users without the capability get 403."""

    required_capability: Capability

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if not user_can(request.user, self.required_capability):
            self.raise_exception = True
            self.permission_denied_message = needs_role_message(self.required_capability)
            return self.handle_no_permission()
        return super().dispatch(request, *args, **kwargs)


def needs_role_message(capability: Capability) -> str:
    """What the 403 page says is missing: "This page needs the curator role (an admin has every role)."."""
    names = [r.value for r in roles_with(capability) if r.value != "admin"]
    if not names:
        return "This page needs the admin role."
    joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"This page needs the {joined} role (an admin has every role)."


class HasCapability(BasePermission):
    """DRF: `permission_classes = [HasCapability.of(Capability.X)]`."""

    capability: Capability

    @classmethod
    def of(cls, capability: Capability) -> type[HasCapability]:
        return type(f"Has_{capability.value}", (cls,), {"capability": capability})

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and user_can(request.user, self.capability))


class HasAnyRole(BasePermission):
    """Any of the five roles (used for the API schema and docs)."""

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and user_roles(request.user))
