"""REST API for Label Studio annotation batches (worklist, progress, agreement, sync log, actions)."""
from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from accounts.selectors import users_by_username
from annotation.selectors import image_ids_visible
from common.errors import Conflict, NotFound
from common.pagination import paginated_response
from common.params import BIGINT_MAX, QueryParams
from common.schema import errors, paginated
from labelstudio import selectors
from labelstudio.client import LabelStudioNotConfigured
from labelstudio.links import label_studio_task_url
from labelstudio.models import AnnotationBatch, AnnotationTask, SyncLogEntry
from labelstudio.services import batch_create
from labelstudio.tasks import push_batch_later, sync_batch_later


class BatchOutput(serializers.ModelSerializer):
    readers = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)

    class Meta:
        model = AnnotationBatch
        fields = ("id", "name", "description", "with_qa", "mode", "per_reader", "maximum_annotations", "readers",
                  "status", "ls_project_id",
                  "push_attempts", "push_error", "next_retry_at", "pushed_at", "synced_until", "last_sync_at",
                  "last_sync_ok", "last_sync_error", "created_at")


class BatchDetailOutput(BatchOutput):
    """The schema of a batch with its progress (the API builds the body itself)."""

    progress = serializers.ListField(child=serializers.DictField(), help_text="per reader: their progress")
    agreement = serializers.DictField(required=False, help_text="not shown to readers (they annotate blind)")

    class Meta(BatchOutput.Meta):
        fields = (*BatchOutput.Meta.fields, "progress", "agreement")


class TaskOutput(serializers.ModelSerializer):
    label_studio_url = serializers.SerializerMethodField()

    class Meta:
        model = AnnotationTask
        fields = ("id", "image", "qa_item", "ls_task_id", "status", "n_annotations", "agreement", "has_disagreement",
                  "synced_at", "label_studio_url")

    def get_label_studio_url(self, task) -> str:
        return label_studio_task_url(task.batch, task)

    def to_representation(self, task):
        data = super().to_representation(task)
        if self.context.get("blind"):   # readers annotate blind: a disagreement can be with the gold answer
            data.pop("agreement", None)
            data.pop("has_disagreement", None)
        return data


class SyncLogOutput(serializers.ModelSerializer):
    class Meta:
        model = SyncLogEntry
        fields = ("id", "created_at", "direction", "level", "code", "message", "ls_task_id", "ls_annotation_id")


class BatchListApi(APIView):
    """GET the batches you may see; POST creates one (manage_annotation) and pushes it unless push=false."""

    class Input(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        description = serializers.CharField(required=False, default="", allow_blank=True)
        images = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX),
                                       required=False)
        qa_items = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX),
                                         required=False)
        maximum_annotations = serializers.IntegerField(min_value=1, max_value=10, default=1)
        mode = serializers.ChoiceField(choices=["independent", "correction"], default="independent",
                                       help_text="independent: no pre-filled boxes; correction: pre-filled to correct")
        readers = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        push = serializers.BooleanField(default=True)

        def validate(self, data):
            if bool(data.get("images")) == bool(data.get("qa_items")):
                raise serializers.ValidationError("give either 'images' or 'qa_items'")
            users, missing = users_by_username(usernames=data["readers"])
            if missing:
                raise serializers.ValidationError(f"unknown readers: {', '.join(missing)}")
            images = data.get("images") or ()     # (batch_create keeps only the QA items that exist)
            unknown = sorted(set(images) - image_ids_visible(user=self.context["user"], ids=images))
            if unknown:   # never written as a task's foreign key (the database refuses it at commit: a 500)
                raise serializers.ValidationError({"images": [f"no images with ids {unknown}"]})
            data["readers"] = users
            return data

    def get_permissions(self):
        cap = Capability.MANAGE_ANNOTATION if self.request.method == "POST" else Capability.VIEW_WORKLIST
        return [HasCapability.of(cap)()]

    @extend_schema(responses=paginated(BatchOutput))
    def get(self, request):
        return paginated_response(request, selectors.batch_list(user=request.user), BatchOutput, view=self)

    @extend_schema(request=Input, responses={201: BatchOutput})
    def post(self, request):
        data = self.Input(data=request.data, context={"user": request.user})
        data.is_valid(raise_exception=True)
        d = data.validated_data
        batch = batch_create(name=d["name"], description=d["description"], actor=request.user,
                             images=d.get("images") or None, qa_items=d.get("qa_items") or None,
                             maximum_annotations=d["maximum_annotations"], readers=d["readers"], mode=d["mode"])
        if d["push"] and settings.LABEL_STUDIO_URL:
            push_batch_later(batch.pk)
        return Response(BatchOutput(batch).data, status=status.HTTP_201_CREATED)


class BatchDetailApi(APIView):
    """One batch with per-radiologist progress and agreement."""

    permission_classes = [HasCapability.of(Capability.VIEW_WORKLIST)]

    @extend_schema(responses=BatchDetailOutput)
    def get(self, request, pk: int):
        batch = selectors.batch_get(user=request.user, pk=pk)
        body = {**BatchOutput(batch).data, "progress": selectors.batch_reader_progress(batch=batch)}
        if selectors.sees_reader_work(request.user):   # readers annotate blind
            body["agreement"] = selectors.batch_agreement_summary(batch=batch)
        return Response(body)


class BatchTasksApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_WORKLIST)]

    @extend_schema(parameters=[
        OpenApiParameter("status", str, enum=AnnotationTask.Status.values),
        OpenApiParameter("disagreement", bool, description="only tasks whose readers disagree (not for readers)")],
        responses=paginated(TaskOutput))
    def get(self, request, pk: int):
        batch = selectors.batch_get(user=request.user, pk=pk)
        params = QueryParams(request.query_params)
        task_status = params.choice("status", AnnotationTask.Status.values)
        disagreement = params.boolean("disagreement")
        params.check()
        tasks = selectors.batch_tasks(batch=batch, user=request.user, status=task_status,
                                      disagreement=bool(disagreement))
        return paginated_response(request, tasks.select_related("batch"), TaskOutput, view=self,
                                  context={"blind": not selectors.sees_reader_work(request.user)})


class BatchSyncLogApi(APIView):
    permission_classes = [HasCapability.of(Capability.MANAGE_ANNOTATION)]

    @extend_schema(parameters=[OpenApiParameter("level", str, enum=SyncLogEntry.Level.values)],
                   responses=paginated(SyncLogOutput))
    def get(self, request, pk: int):
        batch = selectors.batch_get(user=request.user, pk=pk)
        params = QueryParams(request.query_params)
        level = params.choice("level", SyncLogEntry.Level.values)
        params.check()
        log = selectors.batch_sync_log(batch=batch, level=level)
        return paginated_response(request, log, SyncLogOutput, view=self)


class BatchActionApi(APIView):
    """POST push | sync | full-sync (queued; the batch's status and sync log show the outcome). 409 when
    Label Studio is not configured or a sync is asked of a batch not pushed yet; 404 for another action."""

    permission_classes = [HasCapability.of(Capability.MANAGE_ANNOTATION)]

    @extend_schema(operation_id="annotation_batches_action", request=None, parameters=[
        OpenApiParameter("action", str, OpenApiParameter.PATH, enum=["push", "sync", "full-sync"])],
        responses={202: inline_serializer("BatchActionOutput", fields={
            "status": serializers.CharField(), "action": serializers.CharField()}), **errors(409)})
    def post(self, request, pk: int, action: str):
        batch = selectors.batch_get(user=request.user, pk=pk)
        if not settings.LABEL_STUDIO_URL:
            raise LabelStudioNotConfigured("Label Studio is not configured (LABEL_STUDIO_URL)")
        if action == "push":
            push_batch_later(batch.pk)
        elif action in ("sync", "full-sync"):
            if not batch.in_label_studio:
                raise Conflict("push the batch first")
            sync_batch_later(batch.pk, full=action == "full-sync")
        else:
            raise NotFound(f"unknown action {action!r}")
        return Response({"status": "queued", "action": action}, status=status.HTTP_202_ACCEPTED)
