"""The dashboard: what waits for the signed-in user, across every domain."""
from __future__ import annotations

from django.shortcuts import render
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability

from . import selectors


class DashboardView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_DASHBOARD

    def get(self, request):
        return render(request, "dashboard/dashboard.html", selectors.dashboard(user=request.user))
