"""The adjudication queue: cases found by the detection rules, highest priority first."""
from __future__ import annotations

from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils.http import urlencode
from django.views import View
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.views import APIView

from accounts.permissions import CapabilityRequiredMixin, HasCapability
from accounts.roles import Capability
from medr2.pagination import StandardPagination

from . import selectors
from .models import AdjudicationCase

PER_PAGE = 50


def _filters(params) -> dict:
    return {k: params.get(k, "") for k in selectors.CASE_FILTERS}


class QueueView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_QUEUE

    def get(self, request):
        filters = _filters(request.GET)
        page = Paginator(selectors.case_list(filters=filters), PER_PAGE).get_page(request.GET.get("page"))
        choices = [(name, [(value, label, (filters.get(name) or ("todo" if name == "status" else "")) == value)
                           for value, label in options])
                   for name, options in selectors.case_filter_choices().items()]
        return render(request, "annotation/queue.html", {
            "page": page, "filters": filters, "choices": choices,
            "query": urlencode({k: v for k, v in filters.items() if v})})


class CaseOutput(serializers.ModelSerializer):
    stage = serializers.SlugRelatedField(slug_field="code", read_only=True)
    category = serializers.SlugRelatedField(slug_field="code", read_only=True)
    rules = serializers.ListField(source="rule_names", child=serializers.CharField(), read_only=True)

    class Meta:
        model = AdjudicationCase
        fields = ("id", "key", "item", "item_key", "image", "stage", "category", "modality", "rules", "hits",
                  "priority", "run_ids", "status", "version", "created_at", "updated_at")


class CaseListApi(APIView):
    """GET the adjudication queue (filters: status=todo|all|open|in_progress|resolved, stage, category,
    modality, rule), highest priority first."""

    permission_classes = [HasCapability.of(Capability.VIEW_QUEUE)]

    @extend_schema(responses=CaseOutput(many=True))
    def get(self, request):
        paginator = StandardPagination()
        page = paginator.paginate_queryset(selectors.case_list(filters=_filters(request.query_params)), request,
                                           view=self)
        return paginator.get_paginated_response(CaseOutput(page, many=True).data)
