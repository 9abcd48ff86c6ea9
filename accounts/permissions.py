"""Role checks for views (mixin) and DRF APIs (permission class)."""
from __future__ import annotations

from django.contrib.auth.mixins import AccessMixin
from rest_framework.permissions import BasePermission

from .roles import Capability, user_can, user_roles


class CapabilityRequiredMixin(AccessMixin):
    """Anonymous users go to the login page; logged-in users without the capability get 403."""

    required_capability: Capability

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if not user_can(request.user, self.required_capability):
            self.raise_exception = True
            return self.handle_no_permission()
        return super().dispatch(request, *args, **kwargs)


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
