from django.core.paginator import Paginator
from django.shortcuts import render
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability

from .selectors import audit_action_names, audit_event_list
from .services import audit_verify

EVENTS_PER_PAGE = 50


class AuditEventListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_AUDIT

    def get(self, request):
        filters = {k: request.GET.get(k, "").strip() for k in ("action", "actor", "object_type", "object_id")}
        page = Paginator(audit_event_list(**filters), EVENTS_PER_PAGE).get_page(request.GET.get("page"))
        query = request.GET.copy()
        query.pop("page", None)
        return render(request, "audit/event_list.html", {
            "page": page, "filters": filters, "actions": audit_action_names(), "query": query.urlencode(),
        })


class AuditVerifyView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_AUDIT

    def get(self, request):
        return render(request, "audit/verify.html", {"result": audit_verify()})
