"""REST API of the audit trail: the filtered events (an object's history included), their streamed
export, and the verification of the chain and its checkpoints. Bad filters answer 400 `invalid` through
common.errors.exception_handler, naming the parameter."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from common.pagination import paginated_response
from common.schema import errors, paginated

from .export import CONTENT_TYPES, export_response
from .filters import BOOKKEEPING_ACTIONS, parse_event_filters
from .links import object_link
from .selectors import audit_event_list
from .services import audit_verify

FILTER_PARAMS = [
    OpenApiParameter("action", str, description="actions starting with this, e.g. `annotation.qa_item`"),
    OpenApiParameter("actor", str, description="the actor's username at the time (`system` without a user)"),
    OpenApiParameter("object_type", str, description="with `object_id`: the object's history, including bulk "
                                                     "events that list it, e.g. `annotation.qaitem`"),
    OpenApiParameter("object_id", str, description="the object's id"),
    OpenApiParameter("date_from", OpenApiTypes.DATE, description="first day, inclusive (UTC)"),
    OpenApiParameter("date_to", OpenApiTypes.DATE, description="last day, inclusive (UTC)"),
    OpenApiParameter("seq_from", int, description="first event number, inclusive"),
    OpenApiParameter("seq_to", int, description="last event number, inclusive"),
    OpenApiParameter("bookkeeping", bool, description="include worker bookkeeping events, hidden by default: "
                                                      + ", ".join(sorted(BOOKKEEPING_ACTIONS))),
]


@extend_schema_field({"type": "array", "description": "the other objects the event touched (a bulk event's items)",
                      "items": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2,
                                "description": "[object_type, object_id]"}})
class TouchedObjectsField(serializers.Field):
    def __init__(self, **kwargs):
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, event) -> list[list[str]]:
        return [[o.object_type, o.object_id] for o in event.touched.all()]


class AuditEventOutput(serializers.Serializer):
    seq = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    actor = serializers.CharField(source="actor_name")
    action = serializers.CharField()
    object_type = serializers.CharField()
    object_id = serializers.CharField()
    object_url = serializers.SerializerMethodField()
    before = serializers.JSONField()
    after = serializers.JSONField()
    prev_hash = serializers.CharField()
    hash = serializers.CharField()

    def get_fields(self):
        # the touched list is called `objects`, as in the exports (declared here, not as a class
        # attribute, so the name does not read as a model manager)
        fields = super().get_fields()
        fields["objects"] = TouchedObjectsField()
        return fields

    def get_object_url(self, event) -> str | None:
        return object_link(event.object_type, event.object_id)


class AuditEventListApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_AUDIT)]

    @extend_schema(parameters=FILTER_PARAMS, responses=paginated(AuditEventOutput))
    def get(self, request):
        filters = parse_event_filters(request.query_params)
        return paginated_response(request, audit_event_list(filters), AuditEventOutput, view=self)


class _JsonErrorsOnly(BaseContentNegotiation):
    """The export streams its own CSV/JSONL body; errors answer JSON whatever the Accept header says."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None


class AuditEventExportApi(APIView):
    """The filtered events as CSV or JSONL, streamed, oldest first. Columns: seq, created_at, actor, action,
    object_type, object_id, objects (the touched list), before, after (JSON), prev_hash, hash."""

    permission_classes = [HasCapability.of(Capability.VIEW_AUDIT)]
    content_negotiation_class = _JsonErrorsOnly

    @extend_schema(
        operation_id="audit_events_export",
        parameters=[OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=["csv", "jsonl"],
                                     description="csv or jsonl"), *FILTER_PARAMS],
        responses={(200, "text/csv"): OpenApiTypes.STR, (200, "application/x-ndjson"): OpenApiTypes.STR,
                   **errors(400, 404)})
    def get(self, request, fmt: str):
        if fmt not in CONTENT_TYPES:
            raise exceptions.NotFound("export formats: csv, jsonl")
        return export_response(parse_event_filters(request.query_params), fmt)


class AuditCheckpointOutput(serializers.Serializer):
    id = serializers.IntegerField()
    seq = serializers.IntegerField()
    head_hash = serializers.CharField()
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    public_key = serializers.CharField()
    ok = serializers.BooleanField()
    problem = serializers.CharField()


class AuditVerifyOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    chain_ok = serializers.BooleanField(help_text="the events themselves verify")
    checked = serializers.IntegerField()
    head_hash = serializers.CharField()
    first_bad_seq = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()
    bad_checkpoint = serializers.IntegerField(allow_null=True)
    checkpoints = AuditCheckpointOutput(many=True)


class AuditVerifyApi(APIView):
    """Walk the chain and check every signed checkpoint (a checkpoint beyond the chain's end shows a
    truncated tail). `public_key`: also require every checkpoint to be signed by that key."""

    permission_classes = [HasCapability.of(Capability.VIEW_AUDIT)]

    @extend_schema(parameters=[OpenApiParameter("public_key", str, description="expected Ed25519 public key (hex)")],
                   responses={200: AuditVerifyOutput, **errors(400)})
    def get(self, request):
        result = audit_verify(public_key=request.query_params.get("public_key", "").strip() or None)
        return Response(AuditVerifyOutput(result).data)
