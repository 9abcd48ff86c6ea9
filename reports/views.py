"""Report pages (docs/reports.md). Thin: parse, call one service or selector, render. The board (auditors,
admins) creates reports, sets their criteria, generates versions and signs; curators read."""
from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.clickjacking import xframe_options_sameorigin

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability, user_can
from common.errors import ServiceError
from common.pagination import page_of

from . import selectors
from .forms import CriteriaForm, ReportForm, SignForm
from .models import BuildStatus
from .services import criteria_set, report_create, report_generate, report_sign, report_version_requeue

FILES = {"pdf": ("pdf", "application/pdf"), "json": ("document_json", "application/json"),
         "html": ("html", "text/html; charset=utf-8")}
# the stored HTML is shown in a frame of the report page: its own origin, nothing to run, nothing to fetch
HTML_POLICY = "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def _messages_of(exc: Exception) -> str:
    return "; ".join(exc.messages) if isinstance(exc, ValidationError) else getattr(exc, "message", str(exc))


def file_response(data: bytes, fmt: str, filename: str, *, inline: bool = False) -> HttpResponse:
    response = HttpResponse(data, content_type=FILES[fmt][1])
    disposition = "inline" if inline else "attachment"
    response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    if fmt == "html":
        response["Content-Security-Policy"] = HTML_POLICY
    return response


class ReportListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_REPORTS

    def get(self, request):
        return render(request, "reports/report_list.html", {
            "page": page_of(request, selectors.report_list(), 25),
            "can_manage": user_can(request.user, Capability.MANAGE_REPORTS)})


class ReportCreateView(CapabilityRequiredMixin, View):
    required_capability = Capability.MANAGE_REPORTS

    def _form(self, data=None):
        return ReportForm(data, run_choices=selectors.report_run_choices(),
                          release_choices=selectors.report_release_choices())

    def _render(self, request, form, status=200):
        return render(request, "reports/report_new.html", {"form": form}, status=status)

    def get(self, request):
        return self._render(request, self._form())

    def post(self, request):
        form = self._form(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            runs, _ = selectors.run_list_by_ids(ids=data["runs"])
            release = selectors.release_by_pk(pk=int(data["release"])) if data["release"] else None
            try:
                report = report_create(actor=request.user, title=data["title"], runs=runs, release=release,
                                       scope=data["scope"], out_of_scope=data["out_of_scope"],
                                       limitations=data["limitations"], criteria=data["criteria"])
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, f"Report {report.pk} created. Generate a version once its runs are "
                                          "scored.")
                return redirect("reports:report-detail", pk=report.pk)
        return self._render(request, form, status=400)


class ReportDetailView(CapabilityRequiredMixin, View):
    """The report page: its versions, the chosen version (progress, the rendered report, downloads,
    signatures, the sign form), the acceptance criteria and their history."""

    required_capability = Capability.VIEW_REPORTS

    def get(self, request, pk: int, version=None, sign_form=None, criteria_form=None, status=200):
        report = selectors.report_get(pk=pk)
        versions = list(selectors.version_list(report=report))
        if version is None:
            version = versions[0] if versions else None
        signatures = list(selectors.signature_list(version=version)) if version else []
        criteria = list(selectors.criteria_list(report=report))
        can_sign = user_can(request.user, Capability.SIGN_REPORTS)
        current = criteria[-1].criteria if criteria else []
        return render(request, "reports/report_detail.html", {
            "report": report, "versions": versions, "version": version, "signatures": signatures,
            "signed_copy": selectors.signed_copy_latest(version=version) if version else None,
            "signed_ready": selectors.signed_copy_latest(version=version, ready=True) if version else None,
            "progress": selectors.version_progress(pk=version.pk) if version else None,
            "criteria": criteria, "current_criteria": current,
            "criteria_form": criteria_form or CriteriaForm(initial={"criteria": json.dumps(current, indent=1)}),
            "evidence": selectors.results_evidence(report=report),
            "sign_form": sign_form or SignForm(),
            "can_manage": user_can(request.user, Capability.MANAGE_REPORTS), "can_sign": can_sign,
            "signed_by_me": any(s.signer_id == request.user.pk for s in signatures),
            "generating": any(v.status == BuildStatus.GENERATING for v in versions)}, status=status)


class VersionDetailView(ReportDetailView):
    def get(self, request, pk: int, **kwargs):
        version = selectors.version_get(pk=pk)
        return super().get(request, version.report_id, version=version, **kwargs)


class VersionProgressView(CapabilityRequiredMixin, View):
    """JSON polled by the report page every two seconds while a version is generated."""

    required_capability = Capability.VIEW_REPORTS

    def get(self, request, pk: int):
        return JsonResponse(selectors.version_progress(pk=pk))


class ReportGenerateView(CapabilityRequiredMixin, View):
    required_capability = Capability.MANAGE_REPORTS

    def post(self, request, pk: int):
        report = selectors.report_get(pk=pk)
        try:
            version = report_generate(report=report, actor=request.user)
        except (ValidationError, ServiceError) as exc:
            messages.error(request, _messages_of(exc))
            return redirect("reports:report-detail", pk=pk)
        messages.success(request, f"Version {version.number} queued: it is generated on a worker (progress below).")
        return redirect("reports:version-detail", pk=version.pk)


class VersionRequeueView(CapabilityRequiredMixin, View):
    required_capability = Capability.MANAGE_REPORTS

    def post(self, request, pk: int):
        version = selectors.version_get(pk=pk)
        try:
            report_version_requeue(version=version, actor=request.user)
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Version {version.number} queued again.")
        return redirect("reports:version-detail", pk=pk)


class ReportCriteriaView(CapabilityRequiredMixin, View):
    required_capability = Capability.MANAGE_REPORTS

    def post(self, request, pk: int):
        form = CriteriaForm(request.POST)
        if form.is_valid():
            report = selectors.report_get(pk=pk)
            try:
                row = criteria_set(report=report, actor=request.user, criteria=form.cleaned_data["criteria"],
                                   reason=form.cleaned_data["reason"])
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                flag = " Results existed already: every version judged by them says so." if row.after_results else ""
                messages.success(request, f"Acceptance criteria version {row.number} recorded.{flag}")
                return redirect("reports:report-detail", pk=pk)
        return ReportDetailView().get(request, pk, criteria_form=form, status=400)


class VersionSignView(CapabilityRequiredMixin, View):
    required_capability = Capability.SIGN_REPORTS

    def post(self, request, pk: int):
        version = selectors.version_get(pk=pk)
        form = SignForm(request.POST)
        if form.is_valid():
            try:
                signature = report_sign(version=version, user=request.user, password=form.cleaned_data["password"],
                                        meaning=form.cleaned_data["meaning"])
            except ValidationError as exc:
                form.add_error(None, exc)
            except ServiceError as exc:
                form.add_error(None, exc.message)
            else:
                messages.success(request, f"Signed as {signature.meaning} at {signature.signed_at:%Y-%m-%d %H:%M:%S} "
                                          f"UTC, bound to content hash {signature.document_hash[:16]}….")
                return redirect("reports:version-detail", pk=pk)
        return VersionDetailView().get(request, pk, sign_form=form, status=400)


class VersionFileView(CapabilityRequiredMixin, View):
    """A version's stored PDF, JSON or HTML (the HTML inline: the report page frames it)."""

    required_capability = Capability.VIEW_REPORTS

    @method_decorator(xframe_options_sameorigin)
    def get(self, request, pk: int, fmt: str):
        if fmt not in FILES:
            raise Http404("formats: pdf, json, html")
        version = selectors.version_get(pk=pk)
        data = selectors.version_file(pk=pk, field=FILES[fmt][0]) if version.status == BuildStatus.READY else None
        if data is None:
            raise Http404("this version has no files: it is not ready")
        return file_response(data, fmt, f"report-{version.report_id}-v{version.number}.{fmt}",
                             inline=fmt == "html" or request.GET.get("inline") == "1")


class SignedCopyFileView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_REPORTS

    def get(self, request, pk: int):
        copy = selectors.signed_copy_get(pk=pk)
        if copy.status != BuildStatus.READY:
            raise Http404("this signed copy is not ready")
        data = selectors.signed_copy_pdf(pk=pk)
        version = copy.version
        return file_response(data, "pdf", f"report-{version.report_id}-v{version.number}-signed-"
                                          f"{len(copy.signatures)}.pdf")
