"""Pages of the shortcut audit. Thin: parse, call one service or selector, render."""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability, user_can
from common.pagination import page_of

from . import selectors
from .charts import audit_chart_svgs
from .forms import AuditForm
from .services import shortcut_audit_enqueue
from .shortcuts import BASELINES


def _list_context(request, form):
    page = page_of(request, selectors.shortcut_audit_list(), 25)
    return {"page": page, "form": form, "choices": selectors.audit_filter_choices(),
            "can_run": user_can(request.user, Capability.RUN_SHORTCUT_AUDIT)}


class AuditListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_VALIDITY

    def get(self, request):
        return render(request, "validity/shortcut_list.html", _list_context(request, AuditForm()))


class AuditCreateView(CapabilityRequiredMixin, View):
    required_capability = Capability.RUN_SHORTCUT_AUDIT

    def post(self, request):
        form = AuditForm(request.POST)
        if form.is_valid():
            try:
                audit = shortcut_audit_enqueue(filters=form.filters(), split=form.cleaned_data["split"],
                                               actor=request.user)
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, f"Shortcut audit #{audit.seq} queued ({audit.item_count} items).")
                return redirect("validity:shortcut-detail", pk=audit.pk)
        return render(request, "validity/shortcut_list.html", _list_context(request, form), status=400)


class AuditDetailView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_VALIDITY

    def get(self, request, pk: int):
        audit = selectors.shortcut_audit_get(pk=pk)
        results = audit.results or {}
        categories = results.get("categories", [])
        context = {"audit": audit, "results": results, "categories": categories, "stages": results.get("stages", []),
                   "overall": results.get("overall"), "baselines": BASELINES,
                   "counts": selectors.shortcut_audit_item_counts(audit=audit) if audit.status == "done" else None,
                   "is_latest": (selectors.shortcut_audit_latest_done() or audit).pk == audit.pk}
        if categories:
            # our own SVG, labels escaped by matplotlib
            context.update({name: mark_safe(svg) for name, svg in audit_chart_svgs(categories).items()})
        return render(request, "validity/shortcut_detail.html", context)
