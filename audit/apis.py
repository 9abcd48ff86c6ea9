from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from common.pagination import paginated_response

from .selectors import audit_event_list
from .services import audit_verify


class AuditEventListApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_AUDIT)]

    class Output(serializers.Serializer):
        seq = serializers.IntegerField()
        created_at = serializers.DateTimeField()
        actor = serializers.CharField(source="actor_name")
        action = serializers.CharField()
        object_type = serializers.CharField()
        object_id = serializers.CharField()
        before = serializers.JSONField()
        after = serializers.JSONField()
        prev_hash = serializers.CharField()
        hash = serializers.CharField()

    def get(self, request):
        filters = {k: request.query_params.get(k, "") for k in ("action", "actor", "object_type", "object_id")}
        return paginated_response(request, audit_event_list(**filters), self.Output, view=self)


class AuditVerifyApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_AUDIT)]

    def get(self, request):
        r = audit_verify()
        return Response({"ok": r.ok, "checked": r.checked, "head_hash": r.head_hash,
                         "first_bad_seq": r.first_bad_seq, "reason": r.reason})
