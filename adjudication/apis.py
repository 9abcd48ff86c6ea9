"""Adjudication API: the queue, a case, a verdict, round-robin assignment (DRF; one class per operation)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from common.pagination import paginated_response

from . import selectors, services
from .models import AdjudicationCase, Verdict


class CaseOutput(serializers.ModelSerializer):
    stage = serializers.SlugRelatedField(slug_field="code", read_only=True)
    category = serializers.SlugRelatedField(slug_field="code", read_only=True)
    rules = serializers.ListField(source="rule_names", child=serializers.CharField(), read_only=True)

    class Meta:
        model = AdjudicationCase
        fields = ("id", "key", "item", "item_key", "image", "stage", "category", "modality", "rules", "hits",
                  "priority", "run_ids", "status", "double_read", "outcome", "outcome_answer", "resolved_at",
                  "result_item", "version", "created_at", "updated_at")


class CaseListApi(APIView):
    """GET the adjudication queue (filters: status=todo|all|open|in_progress|tie|resolved, stage, category,
    modality, rule, mine=assigned|unassigned), highest priority first, scoped to the user."""

    permission_classes = [HasCapability.of(Capability.VIEW_QUEUE)]

    @extend_schema(responses=CaseOutput(many=True))
    def get(self, request):
        filters = selectors.case_filters_from(request.query_params)
        ids = selectors.case_list(user=request.user, filters=filters).values_list("pk", flat=True)
        return paginated_response(request, ids, CaseOutput, view=self,
                                  page_rows=lambda page: selectors.cases_in_order(page, columns=None))


class CaseDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_QUEUE)]

    @extend_schema(responses=CaseOutput)
    def get(self, request, pk: int):
        return Response(CaseOutput(selectors.case_get(user=request.user, pk=pk)).data)


class CaseVerdictApi(APIView):
    """POST a verdict: {"verdict", "answer" (corrected: option text(s) or [x0, y0, x1, y1]), "comment",
    "time_spent_s", "version"}. 409 when the case changed since `version` (nothing is written): the error
    body carries the case's current `version`."""

    permission_classes = [HasCapability.of(Capability.ADJUDICATE)]

    class Input(serializers.Serializer):
        verdict = serializers.ChoiceField(choices=Verdict.choices)
        answer = serializers.JSONField(required=False, allow_null=True)
        comment = serializers.CharField(required=False, allow_blank=True, max_length=5000)
        time_spent_s = serializers.FloatField(required=False, allow_null=True, min_value=0)
        version = serializers.IntegerField(min_value=1)

    @extend_schema(request=Input, responses=CaseOutput)
    def post(self, request, pk: int):
        case = selectors.case_get(user=request.user, pk=pk)
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        services.case_verdict_submit(case_id=case.pk, reader=request.user, verdict=d["verdict"],
                                     answer=d.get("answer"), comment=d.get("comment", ""),
                                     time_spent_s=d.get("time_spent_s"), expected_version=d["version"])
        case.refresh_from_db()
        return Response(CaseOutput(case).data)


class CaseAssignApi(APIView):
    """POST {"case_ids": [..] (default: the open queue by priority), "double_read": false, "limit": 500}:
    round-robin assignment to the active adjudicators."""

    permission_classes = [HasCapability.of(Capability.ASSIGN_CASES)]

    class Input(serializers.Serializer):
        case_ids = serializers.ListField(child=serializers.IntegerField(), required=False)
        double_read = serializers.BooleanField(default=False)
        limit = serializers.IntegerField(default=500, min_value=1, max_value=5000)

    @extend_schema(request=Input, responses=dict)
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        summary = services.cases_assign_round_robin(case_ids=d.get("case_ids"), actor=request.user,
                                                    double_read=d["double_read"], limit=d["limit"])
        return Response(vars(summary))
