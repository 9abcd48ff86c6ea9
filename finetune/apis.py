"""REST API for fine-tuning jobs: list and create, one job (with its live progress), cancel and resume."""
from __future__ import annotations

from pathlib import PurePath

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from common.errors import NotFound
from common.pagination import paginated_response
from common.params import BIGINT_MAX, QueryParams
from common.schema import errors, paginated
from releases.selectors import release_find
from workers.selectors import endpoint_find

from . import selectors
from .core.recipes import RECIPE_LABELS, RECIPES
from .models import FineTuneJob
from .services import job_cancel, job_create, job_resume


class EndpointRef(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    label = serializers.CharField()


class ResultModel(EndpointRef):
    lineage = serializers.JSONField()


class ReleaseRef(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.CharField()


class RunRef(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.CharField()


class JobProgressOutput(serializers.Serializer):
    step = serializers.IntegerField()
    steps = serializers.IntegerField()
    loss = serializers.FloatField(required=False)
    val_loss = serializers.FloatField(required=False)
    tokens = serializers.IntegerField(required=False)
    tokens_per_s = serializers.FloatField(required=False)
    eta_s = serializers.FloatField(required=False)
    peak_rss_bytes = serializers.IntegerField(required=False)
    history = serializers.ListField(child=serializers.DictField(), help_text='[{"step", "loss", "val_loss"?}, ...]')


class Strict(serializers.Serializer):
    """A nested input that refuses keys it does not know (instead of dropping them unseen)."""

    def to_internal_value(self, data):
        if isinstance(data, dict) and (unknown := sorted(set(data) - set(self.fields))):
            raise serializers.ValidationError(f"unknown keys {unknown}; allowed: {', '.join(self.fields)}")
        return super().to_internal_value(data)


class JobOutput(serializers.ModelSerializer):
    base_model = EndpointRef(source="base_endpoint")
    release = ReleaseRef(allow_null=True)
    recipe_label = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    work_folder = serializers.SerializerMethodField()
    result_model = ResultModel(source="result_endpoint", allow_null=True)
    evaluation_run = RunRef(allow_null=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = FineTuneJob
        fields = ("id", "name", "status", "base_model", "release", "item_filters", "recipe", "recipe_label", "steps",
                  "seed", "config", "data", "progress", "work_folder", "cancel_requested", "attempts", "error",
                  "result", "adapter_hashes", "result_model", "evaluation_run", "created_by", "created_at",
                  "started_at", "finished_at")

    def get_recipe_label(self, job) -> str:
        return RECIPE_LABELS.get(job.recipe, job.recipe)

    @extend_schema_field(JobProgressOutput)
    def get_progress(self, job) -> dict:
        return selectors.job_progress(job=job)["progress"]

    def get_work_folder(self, job) -> str:
        return PurePath(job.work_dir).name if job.work_dir else ""


class JobItemFiltersInput(Strict):
    stage = serializers.ListField(child=serializers.CharField(), required=False)
    category = serializers.ListField(child=serializers.CharField(), required=False)
    modality = serializers.ListField(child=serializers.CharField(), required=False)
    status = serializers.ListField(child=serializers.CharField(), required=False)
    item_ids = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX), required=False)


class JobSettingsInput(Strict):
    """Training settings (finetune.core.trainer.TrainConfig); each omitted one takes its default."""

    tokens_per_step = serializers.IntegerField(required=False)
    micro_batch = serializers.IntegerField(required=False)
    lr = serializers.FloatField(required=False)
    weight_decay = serializers.FloatField(required=False)
    warmup_steps = serializers.IntegerField(required=False)
    lora_r = serializers.IntegerField(required=False)
    lora_alpha = serializers.IntegerField(required=False)
    lora_dropout = serializers.FloatField(required=False)
    target_modules = serializers.ListField(child=serializers.CharField(), required=False)
    eval_every = serializers.IntegerField(required=False)
    eval_max_examples = serializers.IntegerField(required=False)
    patience = serializers.IntegerField(required=False)
    checkpoint_every = serializers.IntegerField(required=False)
    max_length = serializers.IntegerField(required=False)
    device = serializers.CharField(required=False)


class JobCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    base_model = serializers.SlugField(help_text="the base model's endpoint name (a local transformers VLM)")
    release = serializers.CharField(required=False, allow_null=True, default=None,
                                    help_text="a release version: train on its train split")
    item_filters = JobItemFiltersInput(required=False, default=dict, help_text="without a release: current items")
    recipe = serializers.ChoiceField(choices=[(r, RECIPE_LABELS[r]) for r in RECIPES])
    steps = serializers.IntegerField(min_value=1, help_text="the budget: optimizer steps")
    seed = serializers.IntegerField(min_value=0, required=False, default=0)
    config = JobSettingsInput(required=False, default=dict, help_text="training settings; omitted: the defaults")


class JobListApi(APIView):
    """GET fine-tuning jobs (view_results); POST creates one and queues it on the gpu queue (run_evaluations)."""

    def get_permissions(self):
        cap = Capability.RUN_EVALUATIONS if self.request.method == "POST" else Capability.VIEW_RESULTS
        return [HasCapability.of(cap)()]

    @extend_schema(parameters=[OpenApiParameter("status", str, enum=FineTuneJob.Status.values)],
                   responses=paginated(JobOutput))
    def get(self, request):
        params = QueryParams(request.query_params)
        job_status = params.choice("status", FineTuneJob.Status.values)
        params.check()
        return paginated_response(request, selectors.job_list_by_status(status=job_status), JobOutput, view=self)

    @extend_schema(request=JobCreateInput, responses={201: JobOutput})
    def post(self, request):
        data = JobCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        base = endpoint_find(name=d["base_model"])
        if base is None:
            raise DjangoValidationError({"base_model": f"unknown model {d['base_model']!r}"})
        release = None
        if d["release"]:
            release = release_find(version=d["release"])
            if release is None:
                raise DjangoValidationError({"release": f"unknown release {d['release']!r}"})
        job = job_create(actor=request.user, base_endpoint=base, recipe=d["recipe"], steps=d["steps"], release=release,
                         item_filters=dict(d["item_filters"]), seed=d["seed"], config=dict(d["config"]),
                         name=d["name"])
        return Response(JobOutput(job).data, status=status.HTTP_201_CREATED)


class JobDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_RESULTS)]

    @extend_schema(responses=JobOutput)
    def get(self, request, pk: int):
        return Response(JobOutput(selectors.job_get(pk=pk)).data)


class JobActionApi(APIView):
    """POST cancel (a pending job at once; a running one after its current step) or resume (a cancelled or failed
    job, from its last checkpoint). A job in another state: 409."""

    permission_classes = [HasCapability.of(Capability.RUN_EVALUATIONS)]

    @extend_schema(operation_id="finetune_jobs_action", request=None, parameters=[
        OpenApiParameter("action", str, OpenApiParameter.PATH, enum=["cancel", "resume"])],
        responses={200: JobOutput, **errors(409)})
    def post(self, request, pk: int, action: str):
        service = {"cancel": job_cancel, "resume": job_resume}.get(action)
        if service is None:
            raise NotFound(f"unknown action {action!r}; cancel or resume")
        job = service(job=selectors.job_get(pk=pk), actor=request.user)
        return Response(JobOutput(selectors.job_get(pk=job.pk)).data)
