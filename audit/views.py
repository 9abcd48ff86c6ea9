from django.shortcuts import render
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability
from common.pagination import page_of

from .selectors import audit_action_names, audit_event_list
from .services import audit_verify

EVENTS_PER_PAGE = 50


class AuditEventListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_AUDIT

    def get(self, request):
        filters = {k: request.GET.get(k, "").strip() for k in ("action", "actor", "object_type", "object_id")}
        page = page_of(request, audit_event_list(**filters), EVENTS_PER_PAGE)
        return render(request, "audit/event_list.html", {
            "page": page, "filters": filters, "actions": audit_action_names(),
        })


class AuditVerifyView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_AUDIT

    def get(self, request):
        return render(request, "audit/verify.html", {"result": audit_verify()})
