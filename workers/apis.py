"""REST API for models, evaluation runs, progress, results and predictions."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from annotation.models import QAItem, VariantKind
from common.errors import Conflict, NotFound
from common.pagination import paginated_response
from common.params import BIGINT_MAX, QueryParams
from common.schema import errors, paginated

from . import selectors
from .models import EvaluationRun, ModelEndpoint, Prediction, RunSplit
from .services.endpoints import endpoint_create, prior_fit
from .services.reference import run_set_reference
from .services.runs import run_cancel, run_create, run_resume
from .tasks import run_score_later


class EndpointOutput(serializers.ModelSerializer):
    class Meta:
        model = ModelEndpoint
        fields = ("id", "name", "display_name", "description", "backend", "parameters", "queue", "prompt_template",
                  "prompt_template_hash", "box_format", "is_active", "created_at")


class EndpointListApi(APIView):
    """GET models; POST registers one (manage_models)."""

    class Input(serializers.Serializer):
        name = serializers.SlugField(max_length=80)
        backend = serializers.CharField()
        parameters = serializers.DictField(required=False, default=dict)
        queue = serializers.ChoiceField(choices=["gpu", "cpu"], required=False)
        prompt_template = serializers.CharField(required=False, default="{prompt}")
        display_name = serializers.CharField(required=False, default="", allow_blank=True)
        box_format = serializers.ChoiceField(choices=["auto", "pixel", "unit", "norm1000"], required=False,
                                             default="auto")

    def get_permissions(self):
        cap = Capability.MANAGE_MODELS if self.request.method == "POST" else Capability.VIEW_RESULTS
        return [HasCapability.of(cap)()]

    @extend_schema(responses=paginated(EndpointOutput))
    def get(self, request):
        return paginated_response(request, selectors.endpoint_list(), EndpointOutput, view=self)

    @extend_schema(request=Input, responses={201: EndpointOutput})
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint = endpoint_create(actor=request.user, **data.validated_data)
        if endpoint.backend == "prior":
            endpoint = prior_fit(endpoint=endpoint, actor=request.user)
        return Response(EndpointOutput(endpoint).data, status=status.HTTP_201_CREATED)


class RunOutput(serializers.ModelSerializer):
    endpoints = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    progress = serializers.SerializerMethodField()

    class Meta:
        model = EvaluationRun
        fields = ("id", "name", "status", "split", "endpoints", "item_filters", "variant_kinds", "batch_size",
                  "n_variants", "total", "progress", "error", "created_at", "started_at", "finished_at", "scored_at",
                  "is_reference", "reference_set_at", "reference_reason")

    def get_progress(self, run) -> dict:
        known = self.context.get("progress")  # a page of runs: computed for all of them in one query
        return (known[run.pk] if known else selectors.run_progress(run=run)).as_dict()


class RunListApi(APIView):
    """GET runs; POST creates and starts one (run_evaluations)."""

    class Input(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        models = serializers.ListField(child=serializers.SlugField(), allow_empty=False, help_text="endpoint names")
        item_filters = serializers.DictField(required=False, default=dict)
        variant_kinds = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        batch_size = serializers.IntegerField(min_value=1, max_value=5000, required=False, default=64)
        split = serializers.ChoiceField(choices=RunSplit.values, required=False, default=RunSplit.TEST,
                                        help_text="patient-level split evaluated; benchmark runs use test")
        allow_train_overlap = serializers.BooleanField(
            required=False, default=False,
            help_text="allow a fitted baseline (the prior) to be scored on the split it learned from")

    def get_permissions(self):
        cap = Capability.RUN_EVALUATIONS if self.request.method == "POST" else Capability.VIEW_RESULTS
        return [HasCapability.of(cap)()]

    @extend_schema(parameters=[OpenApiParameter("status", str, enum=EvaluationRun.Status.values)],
                   responses=paginated(RunOutput))
    def get(self, request):
        params = QueryParams(request.query_params)
        run_status = params.choice("status", EvaluationRun.Status.values)
        params.check()
        progress: dict = {}

        def with_progress(page):   # the progress of the whole page in one query
            progress.update(selectors.run_progress_map(page))
            return page

        return paginated_response(request, selectors.run_list(status=run_status), RunOutput, view=self,
                                  context={"progress": progress}, page_rows=with_progress)

    @extend_schema(request=Input, responses={201: RunOutput})
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        endpoints, missing = selectors.endpoint_by_names(names=d["models"])
        if missing:
            raise DjangoValidationError({"models": f"unknown models: {', '.join(missing)}"})
        run = run_create(name=d["name"], endpoints=endpoints, item_filters=d["item_filters"],
                         variant_kinds=d["variant_kinds"], batch_size=d["batch_size"], split=d["split"],
                         allow_train_overlap=d["allow_train_overlap"], actor=request.user)
        return Response(RunOutput(run).data, status=status.HTTP_201_CREATED)


class RunPreviewApi(APIView):
    """GET what a run with these choices would evaluate, without making it: items, variants, models and
    predictions (variants × models), counted with the run's own item selection, and why `run_create`
    would refuse it. The run form calls it as its choices change. Query parameters, each repeatable:
    `stage`, `category`, `modality`, `status` (default approved), `variant_kinds`; `split` (default test);
    the models as `endpoints` (ids, as the form posts them) or `models` (names); `allow_train_overlap`."""

    permission_classes = [HasCapability.of(Capability.RUN_EVALUATIONS)]

    class Input(serializers.Serializer):
        stage = serializers.ListField(child=serializers.ChoiceField(choices=[]), required=False, default=list)
        category = serializers.ListField(child=serializers.ChoiceField(choices=[]), required=False, default=list)
        modality = serializers.ListField(child=serializers.ChoiceField(choices=[]), required=False, default=list)
        status = serializers.ListField(child=serializers.ChoiceField(choices=QAItem.Status.values), required=False,
                                       default=list)
        variant_kinds = serializers.ListField(child=serializers.ChoiceField(choices=VariantKind.values),
                                              required=False, default=list)
        split = serializers.ChoiceField(choices=RunSplit.values, required=False, default=RunSplit.TEST)
        endpoints = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX),
                                          required=False, default=list)
        models = serializers.ListField(child=serializers.SlugField(), required=False, default=list)
        allow_train_overlap = serializers.BooleanField(required=False, default=False)

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)   # the choices that exist now
            self.fields["stage"].child.choices = [s.code for s in selectors.stage_list()]
            self.fields["category"].child.choices = [c.code for c in selectors.category_list(active_only=False)]
            self.fields["modality"].child.choices = selectors.modality_list()

    class Output(serializers.Serializer):
        items = serializers.IntegerField()
        variants = serializers.IntegerField()
        models = serializers.IntegerField()
        predictions = serializers.IntegerField()
        split = serializers.CharField()
        summary = serializers.CharField(help_text='"1,234 items · 12,340 variants · 3 models → 37,020 predictions"')
        problems = serializers.ListField(child=serializers.CharField())

    # described by hand: the choices that exist are read when a request comes, not when the schema is made
    @extend_schema(parameters=[
        *(OpenApiParameter(name, str, many=True, description=text) for name, text in (
            ("stage", "stage codes (S1–S4)"), ("category", "category codes"),
            ("modality", "modalities of the imported images"), ("status", "item statuses; default approved"),
            ("variant_kinds", "variant kinds; clean is always included"), ("models", "model names"))),
        OpenApiParameter("endpoints", int, many=True, description="model ids"),
        OpenApiParameter("split", str, enum=RunSplit.values, description="patient-level split; default test"),
        OpenApiParameter("allow_train_overlap", bool)], responses=Output)
    def get(self, request):
        data = self.Input(data=request.query_params)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        by_id, missing_ids = selectors.endpoint_by_ids(ids=d["endpoints"], active_only=True)
        by_name, missing_names = selectors.endpoint_by_names(names=d["models"])
        missing = [*map(str, missing_ids), *missing_names, *(e.name for e in by_name if not e.is_active)]
        if missing:
            raise DjangoValidationError({"endpoints" if missing_ids else "models":
                                         f"unknown or inactive models: {', '.join(missing)}"})
        endpoints = {e.pk: e for e in [*by_id, *by_name]}.values()
        preview = selectors.run_preview(item_filters={k: d[k] for k in ("stage", "category", "modality", "status")},
                                        variant_kinds=d["variant_kinds"], split=d["split"], endpoints=endpoints,
                                        allow_train_overlap=d["allow_train_overlap"])
        return Response(self.Output(preview.as_dict()).data)


class RunDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_RESULTS)]

    @extend_schema(responses=RunOutput)
    def get(self, request, pk: int):
        return Response(RunOutput(selectors.run_get(pk=pk)).data)


class RunActionApi(APIView):
    """POST cancel / resume / rescore (rescoring is queued: 202)."""

    permission_classes = [HasCapability.of(Capability.RUN_EVALUATIONS)]

    @extend_schema(operation_id="runs_action", request=None, parameters=[
        OpenApiParameter("action", str, OpenApiParameter.PATH, enum=["cancel", "resume", "rescore"])],
        responses={200: RunOutput, 202: RunOutput, **errors(400)})
    def post(self, request, pk: int, action: str):
        run = selectors.run_get(pk=pk)
        if action == "rescore":
            run_score_later(run.pk)
            return Response(RunOutput(run).data, status=status.HTTP_202_ACCEPTED)
        service = {"cancel": run_cancel, "resume": run_resume}.get(action)
        if service is None:
            raise NotFound(f"unknown action {action!r}")
        run = service(run=run, actor=request.user)
        return Response(RunOutput(run).data)


class RunReferenceApi(APIView):
    """POST {"reference": true|false, "reason": ""}: mark the run as a reference run (only reference runs open
    or re-prioritise adjudication cases) or unmark it (curators, admins; audited). 409 for a run that is not
    finished and scored, or that evaluates only baselines. Asking for the current state changes nothing."""

    permission_classes = [HasCapability.of(Capability.MANAGE_REFERENCE_RUNS)]

    class Input(serializers.Serializer):
        reference = serializers.BooleanField()
        reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=500)

    @extend_schema(request=Input, responses={200: RunOutput, **errors(409)})
    def post(self, request, pk: int):
        run = selectors.run_get(pk=pk)
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        run = run_set_reference(run=run, reference=data.validated_data["reference"], actor=request.user,
                                reason=data.validated_data["reason"])
        return Response(RunOutput(run).data)


class RunResultsApi(APIView):
    """Every metric of a scored run (see docs/evaluation.md for definitions)."""

    permission_classes = [HasCapability.of(Capability.VIEW_RESULTS)]

    @extend_schema(responses={200: inline_serializer("RunResultsOutput", fields={
        "run": serializers.DictField(help_text="the run (as in the run list) with its provenance"),
        "split": serializers.CharField(),
        "metrics": serializers.DictField(help_text="every metric (docs/evaluation.md)")}), **errors(409)})
    def get(self, request, pk: int):
        run = selectors.run_get(pk=pk)
        if run.metrics is None:
            raise Conflict(f"run {run.pk} is not scored yet ({run.status})")
        return Response({"run": {**RunOutput(run).data, "provenance": run.provenance}, "split": run.split,
                         "metrics": run.metrics})


class PredictionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    endpoint = serializers.CharField(source="endpoint.name")
    variant_id = serializers.IntegerField()
    item_id = serializers.IntegerField()
    kind = serializers.CharField(source="variant.kind")
    raw_output = serializers.CharField()
    outcome = serializers.CharField()
    parsed = serializers.JSONField()
    parse_method = serializers.CharField()
    parse_detail = serializers.CharField()
    expected = serializers.JSONField(source="variant.expected_answer")
    correct = serializers.BooleanField()
    iou = serializers.FloatField(allow_null=True)
    cue_adopted = serializers.BooleanField(allow_null=True)
    latency_ms = serializers.FloatField()
    tokens_in = serializers.IntegerField(allow_null=True)
    tokens_out = serializers.IntegerField(allow_null=True)
    error = serializers.CharField()


class PredictionListApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_RESULTS)]

    @extend_schema(parameters=[
        OpenApiParameter("endpoint", str, description="the model: its name or its id"),
        OpenApiParameter("outcome", str, enum=Prediction.Outcome.values),
        OpenApiParameter("kind", str, enum=VariantKind.values, description="the variant kind"),
        OpenApiParameter("stage", str, description="stage code (S1–S4)"),
        OpenApiParameter("correct", OpenApiTypes.BOOL)],
        responses=paginated(PredictionOutput, capped=True))
    def get(self, request, pk: int):
        run = selectors.run_get(pk=pk, with_metrics=False)
        params = QueryParams(request.query_params)
        filters = {"endpoint": params.id_or_name("endpoint", max_length=80),
                   "outcome": params.choice("outcome", Prediction.Outcome.values),
                   "kind": params.choice("kind", VariantKind.values), "stage": params.text("stage", max_length=16),
                   "correct": params.boolean("correct")}
        params.check()
        known = None if any(v not in (None, "") for v in filters.values()) else selectors.run_prediction_count(run=run)
        return paginated_response(request, selectors.prediction_list(run=run, filters=filters), PredictionOutput,
                                  view=self, capped=True, known_count=known)
