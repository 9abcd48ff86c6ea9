"""REST API of the shortcut audit (docs/validity.md)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from common.pagination import paginated_response
from common.schema import paginated

from . import selectors
from .models import ShortcutAudit
from .services import shortcut_audit_enqueue
from .shortcuts import EVALUABLE_SPLITS


class AuditOutput(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ShortcutAudit
        fields = ("id", "seq", "status", "filters", "split", "params", "item_count", "digest", "error", "created_by",
                  "created_at", "started_at", "finished_at")


class AuditDetailOutput(AuditOutput):
    class Meta(AuditOutput.Meta):
        fields = (*AuditOutput.Meta.fields, "results")


class ShortcutAuditListApi(APIView):
    """GET the audits (newest first, paginated); POST starts one (curator, admin): 202 and the pending audit."""

    class Input(serializers.Serializer):
        status = serializers.CharField(required=False, allow_blank=True)
        stage = serializers.CharField(required=False, allow_blank=True)
        category = serializers.ListField(child=serializers.CharField(), required=False)
        modality = serializers.CharField(required=False, allow_blank=True)
        source_dataset = serializers.CharField(required=False, allow_blank=True)
        split = serializers.CharField(required=False, default="test",
                                      help_text=f"one of {', '.join(EVALUABLE_SPLITS)}")

    def get_permissions(self):
        cap = Capability.RUN_SHORTCUT_AUDIT if self.request.method == "POST" else Capability.VIEW_VALIDITY
        return [HasCapability.of(cap)()]

    @extend_schema(responses=paginated(AuditOutput))
    def get(self, request):
        return paginated_response(request, selectors.shortcut_audit_list(), AuditOutput, view=self)

    @extend_schema(request=Input, responses={202: AuditOutput})
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        split = values.pop("split")
        audit = shortcut_audit_enqueue(filters=values, split=split, actor=request.user)
        return Response(AuditOutput(audit).data, status=status.HTTP_202_ACCEPTED)


class ShortcutAuditDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_VALIDITY)]

    @extend_schema(responses=AuditDetailOutput)
    def get(self, request, pk: int):
        return Response(AuditDetailOutput(selectors.shortcut_audit_get(pk=pk)).data)
