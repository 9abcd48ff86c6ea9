"""Pages for models, runs, results and predictions. Thin: parse, call, render."""
from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability, user_can
from annotation.models import VariantKind
from common.errors import ServiceError
from common.pagination import page_of

from . import results, selectors
from .forms import EndpointForm, RunForm
from .models import Prediction
from .results_page import run_results_page
from .services.endpoints import endpoint_create, prior_fit
from .services.reference import run_set_reference
from .services.runs import run_cancel, run_create, run_resume
from .tasks import run_score_later

EXPORT_FORMATS = ("json", "csv", "models.csv")   # models.csv: one row per model and metric


class EndpointListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RESULTS

    def get(self, request):
        return render(request, "workers/endpoint_list.html", {
            "endpoints": selectors.endpoint_list(), "form": EndpointForm(),
            "can_manage": user_can(request.user, Capability.MANAGE_MODELS)})


class EndpointCreateView(CapabilityRequiredMixin, View):
    required_capability = Capability.MANAGE_MODELS

    def post(self, request):
        form = EndpointForm(request.POST)
        if form.is_valid():
            d = form.cleaned_data
            try:
                endpoint = endpoint_create(name=d["name"], backend=d["backend"], parameters=d["parameters"],
                                           queue=d["queue"] or None, prompt_template=d["prompt_template"],
                                           display_name=d["display_name"], box_format=d["box_format"],
                                           actor=request.user)
                if endpoint.backend == "prior":
                    prior_fit(endpoint=endpoint, actor=request.user)
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, f"Registered {endpoint.label}.")
                return redirect("workers:model-list")
        return render(request, "workers/endpoint_list.html", {
            "endpoints": selectors.endpoint_list(), "form": form, "can_manage": True}, status=400)


class RunListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RESULTS

    def get(self, request):
        page = page_of(request, selectors.run_list(status=request.GET.get("status", "")))
        progress = selectors.run_progress_map(page)
        return render(request, "workers/run_list.html", {
            "page": page, "rows": [(r, progress[r.pk]) for r in page],
            "can_run": user_can(request.user, Capability.RUN_EVALUATIONS)})


class RunCreateView(CapabilityRequiredMixin, View):
    required_capability = Capability.RUN_EVALUATIONS

    def get(self, request):
        return render(request, "workers/run_new.html",
                      {"form": RunForm(initial={"name": "Evaluation", "split": "test", "status": ["approved"]})})

    def post(self, request):
        form = RunForm(request.POST)
        if form.is_valid():
            d = form.cleaned_data
            try:
                run = run_create(name=d["name"], endpoints=list(d["endpoints"]), item_filters=form.item_filters(),
                                 variant_kinds=d["variant_kinds"], batch_size=d["batch_size"], split=d["split"],
                                 allow_train_overlap=d["allow_train_overlap"], actor=request.user)
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, f"Run {run.pk} started on the {run.split} split: {run.total} predictions "
                                          f"in batches of {run.batch_size}.")
                return redirect("workers:run-detail", pk=run.pk)
        return render(request, "workers/run_new.html", {"form": form}, status=400)


class RunDetailView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RESULTS

    def get(self, request, pk: int):
        run = selectors.run_get(pk=pk, with_metrics=False)
        return render(request, "workers/run_detail.html", {
            "run": run, "progress": selectors.run_progress(run=run), **run_results_page(run),
            "run_filters": results.filter_summary(run.item_filters), "run_models": list(run.endpoints.all()),
            "can_run": user_can(request.user, Capability.RUN_EVALUATIONS),
            "failed_batches": selectors.run_failed_batches(run=run),
        })


class RunProgressView(CapabilityRequiredMixin, View):
    """JSON polled by the run page every two seconds."""

    required_capability = Capability.VIEW_RESULTS

    def get(self, request, pk: int):
        run = selectors.run_get(pk=pk, with_metrics=False)
        return JsonResponse({"status": run.status, "scored": run.scored_at is not None,
                             **selectors.run_progress(run=run).as_dict()})


class RunActionView(CapabilityRequiredMixin, View):
    required_capability = Capability.RUN_EVALUATIONS

    def post(self, request, pk: int, action: str):
        run = selectors.run_get(pk=pk)
        try:
            if action == "cancel":
                run_cancel(run=run, actor=request.user)
                run_score_later(run.pk)
                messages.info(request, "Run cancelled; what was predicted is kept and scored. Resume continues it.")
            elif action == "resume":
                run_resume(run=run, actor=request.user)
                messages.success(request, "Run resumed: only what is not done yet will run.")
            elif action == "rescore":
                run_score_later(run.pk)
                messages.success(request, "Rescoring queued.")
            else:
                return HttpResponse(status=404)
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
        return redirect("workers:run-detail", pk=pk)


class RunReferenceView(CapabilityRequiredMixin, View):
    """POST (curators, admins) reference=1|0 and an optional reason: mark the run as a reference run (its
    cases open in the adjudication queue) or unmark it (docs/adjudication.md)."""

    required_capability = Capability.MANAGE_REFERENCE_RUNS

    def post(self, request, pk: int):
        run = selectors.run_get(pk=pk)
        reference = request.POST.get("reference", "") in ("1", "true", "on")
        try:
            run = run_set_reference(run=run, reference=reference, actor=request.user,
                                    reason=request.POST.get("reason", ""))
        except (ValidationError, ServiceError) as exc:
            messages.error(request, "; ".join(getattr(exc, "messages", None) or [str(exc)]))
        else:
            messages.success(request, f"Run {run.pk} is now a reference run: its cases are opened in the adjudication "
                                      "queue." if run.is_reference else
                                      f"Run {run.pk} is no longer a reference run: its cases are re-scored without it.")
        return redirect("workers:run-detail", pk=pk)


class RunExportView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RESULTS

    def get(self, request, pk: int, fmt: str):
        if fmt not in EXPORT_FORMATS:
            raise Http404
        run = selectors.run_get(pk=pk)
        if fmt == "json":
            body = json.dumps({"run": {"id": run.pk, "name": run.name, "status": run.status, "split": run.split,
                                       "item_filters": run.item_filters, "variant_kinds": run.variant_kinds,
                                       "provenance": run.provenance}, "metrics": run.metrics}, indent=2)
            response = HttpResponse(body, content_type="application/json")
        elif fmt == "models.csv":
            response = HttpResponse(results.models_csv(run.metrics or {}, run.split), content_type="text/csv")
        else:
            response = HttpResponse(results.cells_csv(run.metrics or {}, run.split), content_type="text/csv")
        name = "models" if fmt == "models.csv" else "results"
        filename = f"run-{run.pk}-{run.split}-{name}.{fmt.rsplit('.', 1)[-1]}"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


class PredictionListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RESULTS

    def get(self, request, pk: int):
        run = selectors.run_get(pk=pk, with_metrics=False)
        filters = {k: request.GET.get(k, "") for k in selectors.PREDICTION_FILTERS}
        known = None if any(filters.values()) else selectors.run_prediction_count(run=run)
        page = page_of(request, selectors.prediction_list(run=run, filters=filters), capped=True, known_count=known)
        return render(request, "workers/prediction_list.html", {
            "run": run, "page": page, "filters": filters,
            "endpoints": run.endpoints.all(), "outcomes": Prediction.Outcome.choices, "kinds": VariantKind.choices,
            "stages": selectors.stage_list()})
