"""Adjudication API: the queue, a case, a verdict, round-robin assignment (DRF; one class per operation)."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from common.pagination import paginated_response
from common.params import BIGINT_MAX, QueryParams
from common.schema import errors, paginated
from common.titles import title_of

from . import selectors, services
from .models import AdjudicationCase, Verdict
from .raised_by import with_raised_by
from .rules import RULES


class RaisedRunOutput(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True, help_text="null for readers (blinded)")
    label = serializers.CharField(help_text="\"Run 12: name\", or \"Reference run 1\" for readers (blinded)")
    name = serializers.CharField(allow_null=True, help_text="null for readers (run names often list the models)")
    reference = serializers.BooleanField(help_text="whether the run is still a reference run")


class RaisedByOutput(serializers.Serializer):
    runs = RaisedRunOutput(many=True)
    models = serializers.ListField(child=serializers.CharField(),
                                   help_text="model names, or \"Model A\", \"Model B\"... for readers")
    annotators = serializers.BooleanField(help_text="Label Studio annotators disagree")


class CaseOutput(serializers.ModelSerializer):
    stage = serializers.SlugRelatedField(slug_field="code", read_only=True)
    category = serializers.SlugRelatedField(slug_field="code", read_only=True)
    rules = serializers.ListField(source="rule_names", child=serializers.CharField(), read_only=True)
    rule_titles = serializers.SerializerMethodField(help_text="the rules' names, in the order of `rules`")
    raised_by = serializers.SerializerMethodField(
        help_text="the reference runs and the models that raised the case (adjudication/raised_by.py)")
    hits = serializers.SerializerMethodField(
        help_text="the rule hits (rule, priority, models, evidence); for readers every model name is replaced "
                  "by its blinded label (\"Model A\"), as on the case page")
    run_ids = serializers.SerializerMethodField(help_text="the reference runs that raised the case; empty for "
                                                          "readers (blinded)")

    class Meta:
        model = AdjudicationCase
        fields = ("id", "key", "item", "item_key", "image", "stage", "category", "modality", "rules", "rule_titles",
                  "hits", "priority", "run_ids", "raised_by", "status", "double_read", "outcome", "outcome_answer",
                  "resolved_at", "result_item", "version", "created_at", "updated_at")

    def get_rule_titles(self, case) -> list[str]:
        return [title_of("rule", name) for name in case.rule_names]

    @extend_schema_field(RaisedByOutput)
    def get_raised_by(self, case) -> dict | None:
        found = getattr(case, "raised_by", None)   # attached by the API with with_raised_by (blinded per user)
        return found.as_dict() if found is not None else None

    def get_hits(self, case) -> list[dict]:
        return self._blinded(case).blind(case.hits or [])

    def get_run_ids(self, case) -> list[int]:
        return [] if self._blinded(case).blinded else list(case.run_ids or [])

    @staticmethod
    def _blinded(case):
        found = getattr(case, "raised_by", None)
        if found is None:   # every API attaches it; without it nothing is shown that could name a model
            raise RuntimeError("CaseOutput needs with_raised_by() to know what the user may see")
        return found


CASE_STATUSES = ["todo", "all", *AdjudicationCase.Status.values]


class CaseListApi(APIView):
    """GET the adjudication queue (filters: status=todo|all|open|in_progress|tie|resolved|withdrawn, stage,
    category, modality, rule, mine=assigned|unassigned), highest priority first, scoped to the user. Each
    case says which reference runs and models raised it (`raised_by`, blinded for readers)."""

    permission_classes = [HasCapability.of(Capability.VIEW_QUEUE)]

    @extend_schema(parameters=[
        OpenApiParameter("status", str, enum=CASE_STATUSES, description="default todo: the cases still to decide"),
        OpenApiParameter("stage", str, description="stage code (S1–S4)"),
        OpenApiParameter("category", str, description="task category code"),
        OpenApiParameter("modality", str),
        OpenApiParameter("rule", str, enum=list(RULES), description="cases a detection rule raised"),
        OpenApiParameter("mine", str, enum=["assigned", "unassigned"])],
        responses=paginated(CaseOutput))
    def get(self, request):
        params = QueryParams(request.query_params)
        filters = {"status": params.choice("status", CASE_STATUSES), "stage": params.text("stage", max_length=16),
                   "category": params.text("category", max_length=64),
                   "modality": params.text("modality", max_length=16),
                   "rule": params.choice("rule", RULES), "mine": params.choice("mine", ["assigned", "unassigned"])}
        params.check()
        ids = selectors.case_list(user=request.user, filters=filters).values_list("pk", flat=True)
        return paginated_response(request, ids, CaseOutput, view=self, page_rows=lambda page: with_raised_by(
            selectors.cases_in_order(page, columns=None), user=request.user))


class CaseDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_QUEUE)]

    @extend_schema(responses=CaseOutput)
    def get(self, request, pk: int):
        (case,) = with_raised_by([selectors.case_get(user=request.user, pk=pk)], user=request.user)
        return Response(CaseOutput(case).data)


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
        version = serializers.IntegerField(min_value=1, max_value=BIGINT_MAX)

    @extend_schema(request=Input, responses={200: CaseOutput, **errors(409)})
    def post(self, request, pk: int):
        case = selectors.case_get(user=request.user, pk=pk)
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        services.case_verdict_submit(case_id=case.pk, reader=request.user, verdict=d["verdict"],
                                     answer=d.get("answer"), comment=d.get("comment", ""),
                                     time_spent_s=d.get("time_spent_s"), expected_version=d["version"])
        case.refresh_from_db()
        (case,) = with_raised_by([case], user=request.user)
        return Response(CaseOutput(case).data)


class CaseAssignApi(APIView):
    """POST {"case_ids": [..] (default: the open queue by priority), "double_read": false, "limit": 500}:
    round-robin assignment to the active adjudicators."""

    permission_classes = [HasCapability.of(Capability.ASSIGN_CASES)]

    class Input(serializers.Serializer):
        case_ids = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX),
                                         required=False)
        double_read = serializers.BooleanField(default=False)
        limit = serializers.IntegerField(default=500, min_value=1, max_value=5000)

    class Output(serializers.Serializer):
        cases = serializers.IntegerField()
        readings = serializers.IntegerField()
        skipped_conflicted = serializers.IntegerField()
        per_reader = serializers.DictField()

    @extend_schema(request=Input, responses=Output)
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        summary = services.cases_assign_round_robin(case_ids=d.get("case_ids"), actor=request.user,
                                                    double_read=d["double_read"], limit=d["limit"])
        return Response(vars(summary))
