"""The audit trail's pages: the filtered event list (full field-level changes, links to objects), its
streamed exports, and the chain verification with the signed checkpoints."""
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils.http import urlencode
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability
from common.pagination import page_of

from .export import CONTENT_TYPES, export_response
from .filters import BOOKKEEPING_ACTIONS, TEXT_FILTERS, parse_event_filters
from .selectors import audit_action_names, audit_event_list
from .services import audit_verify

EVENTS_PER_PAGE = 50
FORM_FIELDS = (*TEXT_FILTERS, "date_from", "date_to", "seq_from", "seq_to", "bookkeeping")


def _messages(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [f"{name}: {m}" for name, errors in exc.message_dict.items() for m in errors]
    return list(exc.messages)


class AuditEventListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_AUDIT

    def get(self, request):
        values = {k: request.GET.get(k, "").strip() for k in FORM_FIELDS}
        values["bookkeeping"] = "1" if values["bookkeeping"].lower() in ("1", "true", "yes", "on") else ""
        context = {"values": values, "actions": audit_action_names(),
                   "bookkeeping_actions": sorted(BOOKKEEPING_ACTIONS)}
        try:
            filters = parse_event_filters(request.GET)
        except ValidationError as exc:
            return render(request, "audit/event_list.html", {**context, "errors": _messages(exc)}, status=400)
        page = page_of(request, audit_event_list(filters), EVENTS_PER_PAGE)
        return render(request, "audit/event_list.html", {**context, "page": page,
                                                         "export_query": urlencode(filters.as_query())})


class AuditEventExportView(CapabilityRequiredMixin, View):
    """The filtered events as CSV or JSONL, streamed (the page's export buttons carry its filters)."""

    required_capability = Capability.VIEW_AUDIT

    def get(self, request, fmt: str):
        if fmt not in CONTENT_TYPES:
            raise Http404("export formats: csv, jsonl")
        try:
            filters = parse_event_filters(request.GET)
        except ValidationError as exc:
            return HttpResponse("; ".join(_messages(exc)) + "\n", status=400, content_type="text/plain; charset=utf-8")
        return export_response(filters, fmt)


class AuditVerifyView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_AUDIT

    def get(self, request):
        return render(request, "audit/verify.html", {"result": audit_verify()})
