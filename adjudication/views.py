"""Adjudication pages: the queue, the case page (the radiologist's main screen), assignment
and the agreement dashboard. Thin: parse, call one selector or service, render."""
from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability, user_can
from adjudication import selectors, services
from adjudication.models import AdjudicationCase, Verdict
from adjudication.raised_by import with_raised_by
from adjudication.viewer import case_viewer_config
from annotation.services.variants import variant_image_path
from annotation.storage import png_response
from annotation.viewer import pixels_response
from common.formatting import plural
from common.pagination import page_of

PER_PAGE = 50
SHORTCUTS = {"confirmed": "C", "corrected": "E", "ambiguous": "A", "flawed": "F"}


class QueueView(CapabilityRequiredMixin, View):
    """GET the queue; POST (curators) assigns the undecided, unassigned cases of the current filter
    round-robin to the adjudicators (optionally for double reading)."""

    required_capability = Capability.VIEW_QUEUE

    def get(self, request):
        filters = selectors.case_filters_from(request.GET)
        ids = selectors.case_list(user=request.user, filters=filters).values_list("pk", flat=True)
        page = page_of(request, ids, PER_PAGE)
        page.object_list = with_raised_by(selectors.with_readers(selectors.cases_in_order(page.object_list)),
                                          user=request.user)   # "Raised by": runs and models, blinded for readers
        choices = [(name, [(value, label, (filters.get(name) or ("todo" if name == "status" else "")) == value)
                           for value, label in options])
                   for name, options in selectors.case_filter_choices().items()]
        return render(request, "adjudication/queue.html", {
            "page": page, "filters": filters, "choices": choices,
            "can_adjudicate": user_can(request.user, Capability.ADJUDICATE),
            "adjudicators": services.adjudicators() if user_can(request.user, Capability.ASSIGN_CASES) else []})

    def post(self, request):
        if not user_can(request.user, Capability.ASSIGN_CASES):
            raise PermissionDenied
        filters = selectors.case_filters_from(request.POST)
        limit = _number(request.POST.get("limit") or 500, int)
        if limit is None or not 1 <= limit <= 5000:
            messages.error(request, "“at most” must be a whole number from 1 to 5000; nothing was assigned.")
            return redirect(f"{reverse('adjudication:queue')}?{urlencode({k: v for k, v in filters.items() if v})}")
        ids = list(selectors.case_list(user=request.user, filters={**filters, "status": "open"})
                   .values_list("pk", flat=True)[:limit])
        try:
            summary = services.cases_assign_round_robin(case_ids=ids, actor=request.user,
                                                        double_read=request.POST.get("double_read") == "on")
        except ValidationError as e:
            messages.error(request, "; ".join(e.messages))
        else:
            per = ", ".join(f"{k} {v}" for k, v in sorted(summary.per_reader.items())) or "nobody"
            messages.success(request, f"Assigned {plural(summary.cases, 'case')} round-robin ({per}); "
                                      f"{summary.skipped_conflicted} skipped: every eligible reader annotated them.")
        return redirect(f"{reverse('adjudication:queue')}?{urlencode({k: v for k, v in filters.items() if v})}")


def _form_answer(post, answer_type: str):
    if answer_type == "box":
        raw = post.get("box_answer", "")
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise ValidationError("the redrawn box could not be read; draw it again") from None
    if answer_type == "multi_choice":
        return post.getlist("answer")
    if answer_type == "short_text":
        return post.get("answer_text", "")
    return post.get("answer") or None


def _number(value, kind=float):
    """A form field as a number; None when it is empty or not a number."""
    try:
        return kind(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


class CaseDetailView(CapabilityRequiredMixin, View):
    """The case page. GET shows it; POST records the reader's verdict and opens the next case."""

    required_capability = Capability.VIEW_QUEUE

    def _render(self, request, case, *, status_code=200, error="", conflict="", posted=None):
        view = selectors.case_view(case=case, user=request.user)
        adjudicator = user_can(request.user, Capability.ADJUDICATE)
        can_read = adjudicator and view.has_room
        annotated = adjudicator and case.status != AdjudicationCase.Status.RESOLVED and (
            request.user.pk in services.conflicted_readers([case])[case.pk])
        return render(request, "adjudication/case_detail.html", {
            "case": case, "view": view, "can_read": can_read and not annotated, "annotated": annotated,
            "taken": adjudicator and not view.has_room and not view.my_reading
            and case.status not in (AdjudicationCase.Status.RESOLVED, AdjudicationCase.Status.WITHDRAWN),
            "can_adjudicate": adjudicator, "verdicts": [(v, label, SHORTCUTS[v]) for v, label in Verdict.choices],
            "error": error, "conflict": conflict, "posted": posted or {},
            "answer_type": view.item.category.answer_type if view.item else "",
            "can_assign": user_can(request.user, Capability.ASSIGN_CASES)
            and case.status not in (AdjudicationCase.Status.RESOLVED, AdjudicationCase.Status.WITHDRAWN),
            "adjudicators": services.adjudicators() if user_can(request.user, Capability.ASSIGN_CASES) else [],
            "viewer": case_viewer_config(case=case, view=view, user=request.user, can_read=can_read and not annotated,
                                         answer_type=view.item.category.answer_type if view.item else ""),
        }, status=status_code)

    def get(self, request, pk: int):
        return self._render(request, selectors.case_get(user=request.user, pk=pk))

    def post(self, request, pk: int):
        case = selectors.case_get(user=request.user, pk=pk)
        answer_type = case.item.category.answer_type if case.item_id else ""
        posted = {"verdict": request.POST.get("verdict", ""), "comment": request.POST.get("comment", ""),
                  "answer": request.POST.getlist("answer"), "box_answer": request.POST.get("box_answer", "")}
        try:
            services.case_verdict_submit(
                case_id=case.pk, reader=request.user, verdict=request.POST.get("verdict", ""),
                answer=_form_answer(request.POST, answer_type), comment=request.POST.get("comment", ""),
                time_spent_s=_number(request.POST.get("time_spent_s")),
                expected_version=_number(request.POST.get("version"), int) or 0)
        except services.CaseConflict as e:
            return self._render(request, selectors.case_get(user=request.user, pk=case.pk), status_code=409,
                                conflict=e.message, posted=posted)
        except ValidationError as e:
            return self._render(request, case, status_code=400, error="; ".join(e.messages), posted=posted)
        case.refresh_from_db()
        label = dict(Verdict.choices).get(request.POST.get("verdict"), "")
        state = "case resolved" if case.status == AdjudicationCase.Status.RESOLVED else case.get_status_display()
        messages.success(request, f"Case {case.pk}: your verdict “{label}” was saved ({state}).")
        nxt = selectors.next_case_for(user=request.user, after=case)
        return redirect("adjudication:case-detail", pk=nxt.pk) if nxt else redirect("adjudication:queue")


class NextCaseView(CapabilityRequiredMixin, View):
    """Open the reader's next case (their pending readings first, then the highest-priority case
    nobody reads yet), skipping `after`; back to the queue when there is none."""

    required_capability = Capability.ADJUDICATE

    def get(self, request):
        after = request.GET.get("after")
        current = selectors.case_find(pk=int(after)) if after and after.isdigit() else None
        nxt = selectors.next_case_for(user=request.user, after=current)
        if nxt is None:
            messages.info(request, "No more cases for you in the queue.")
            return redirect("adjudication:queue")
        return redirect("adjudication:case-detail", pk=nxt.pk)


class CaseAssignView(CapabilityRequiredMixin, View):
    """Curators assign a reader to a case (or withdraw a pending reading)."""

    required_capability = Capability.ASSIGN_CASES

    def post(self, request, pk: int):
        case = selectors.case_get(user=request.user, pk=pk)
        try:
            if request.POST.get("withdraw"):
                reading = selectors.reading_get(case=case, pk=request.POST["withdraw"])
                services.reading_withdraw(reading=reading, actor=request.user)
                messages.success(request, f"{reading.reader.get_username()} no longer reads case {case.pk}.")
            else:
                reader = selectors.user_get(pk=request.POST.get("reader") or 0)
                services.case_assign(case=case, readers=[reader], actor=request.user,
                                     double_read=request.POST.get("double_read") == "on")
                messages.success(request, f"Case {case.pk} assigned to {reader.get_username()}.")
        except ValidationError as e:
            messages.error(request, "; ".join(e.messages))
        return redirect("adjudication:case-detail", pk=case.pk)


class CaseImageView(CapabilityRequiredMixin, View):
    """The case's image, for whoever may see the case (an adjudicator need not be assigned the image)."""

    required_capability = Capability.VIEW_QUEUE

    def get(self, request, pk: int):
        return png_response(selectors.case_get(user=request.user, pk=pk).image.file)


class CasePixelsView(CapabilityRequiredMixin, View):
    """The case image's stored values for the viewer (docs/viewer.md), for whoever may see the case."""

    required_capability = Capability.VIEW_QUEUE

    def get(self, request, pk: int):
        return pixels_response(selectors.case_get(user=request.user, pk=pk).image)


class CaseVariantImageView(CapabilityRequiredMixin, View):
    """The image a model saw for a variant of the case's item (rendered from its recipe on first request)."""

    required_capability = Capability.VIEW_QUEUE

    def get(self, request, pk: int, variant_pk: int):
        case = selectors.case_get(user=request.user, pk=pk)
        variant = selectors.case_variant_get(case=case, pk=variant_pk)
        return png_response(variant_image_path(variant))


class AgreementView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_QUEUE

    def get(self, request):
        return render(request, "adjudication/agreement.html", {
            "rows": selectors.agreement_summary(), "verdicts": Verdict.choices})
