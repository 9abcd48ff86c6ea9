"""The comparison of two or more models of one run: the page (`finetune:compare`) and the API
(`finetune:api-compare`). Thin: parse `run` (required, a run id) and `models` (optional names, comma-separated
or repeated; default every model of the run, the base first), call `finetune.comparison.model_comparison`
(cached; the page caches its tables and figures with it: `model_comparison_derived`), render. A missing or
malformed run id answers 400, an unknown run 404, a model not in the run (or fewer than two models) 400: on
the page with the message above the form, in the API as the one error shape."""
from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.shortcuts import render
from django.views import View
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import CapabilityRequiredMixin, HasCapability
from accounts.roles import Capability
from common.schema import errors
from workers.selectors import run_find

from .charts import comparison_page
from .comparison import (
    comparison_run_choices,
    comparison_run_get,
    model_comparison,
    model_comparison_derived,
    run_model_choices,
)

MAX_ID = 2**31 - 1   # the largest primary key: a bigger number names no run (and is not sent to the database)
RUN_MESSAGES = {"required": "Choose an evaluation run to compare its models.",
                "invalid": "The run must be a run id (a whole number).",
                "min_value": "The run must be a run id (a whole number from 1).",
                "max_value": "There is no evaluation run with so large an id."}


def model_names(values: list[str]) -> list[str]:
    """`models=a,b` or `models=a&models=b` as names, in order, blanks and repeats dropped."""
    names = []
    for value in values:
        for name in value.split(","):
            if name.strip() and name.strip() not in names:
                names.append(name.strip())
    return names


class ComparisonForm(forms.Form):
    run = forms.IntegerField(min_value=1, max_value=MAX_ID, error_messages=RUN_MESSAGES)


class ComparisonView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RESULTS

    def get(self, request):
        form = ComparisonForm(request.GET)
        context = {"names": model_names(request.GET.getlist("models")), "run_text": request.GET.get("run", "")}
        if not form.is_valid():
            return self._page(request, context, 400, " ".join(form.errors["run"]))
        run = run_find(pk=form.cleaned_data["run"], with_metrics=False)
        if run is None:
            return self._page(request, context, 404, f"There is no evaluation run {form.cleaned_data['run']}.")
        context.update(run=run, model_choices=run_model_choices(run=run))
        try:
            page = model_comparison_derived(run=run, endpoints=context["names"] or None, derive=comparison_page)
        except ValidationError as exc:
            return self._page(request, context, 400, " ".join(exc.messages))
        return self._page(request, {**context, **page}, 200)

    def _page(self, request, context: dict, status: int, error: str = ""):
        run = context.get("run")
        context.update(error=error, runs=comparison_run_choices(include=run.pk if run else None))
        return render(request, "finetune/compare.html", context, status=status)


class ComparisonInput(serializers.Serializer):
    run = serializers.IntegerField(min_value=1, max_value=MAX_ID, help_text="the evaluation run's id")
    models = serializers.CharField(required=False, allow_blank=True,
                                   help_text="model names, comma-separated (or the parameter repeated); default "
                                             "every model of the run. The base model is compared with each other "
                                             "one: the base of the fine-tuning job the run evaluates, else the "
                                             "model the others' lineage names, else the first named.")


class ComparisonApi(APIView):
    """Two or more models of one run compared on the same variants (finetune/comparison.py): per model its
    numbers with 95% cluster-bootstrap intervals and its fine-tuning lineage; per model the difference from
    the base with a paired interval; fine-tuned models grouped by recipe (mean over seeds)."""

    permission_classes = [HasCapability.of(Capability.VIEW_RESULTS)]

    @extend_schema(parameters=[ComparisonInput], responses={200: OpenApiTypes.OBJECT, **errors(404)},
                   summary="Compare models of one run (base against the others, paired)")
    def get(self, request):
        params = ComparisonInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        run = comparison_run_get(pk=params.validated_data["run"])
        names = model_names(request.query_params.getlist("models"))
        return Response(model_comparison(run=run, endpoints=names or None))
