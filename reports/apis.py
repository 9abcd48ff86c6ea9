"""REST API of model reports (docs/reports.md): list, create, read, set criteria, generate a version, read a
version, sign it, download its files. Errors are answered by common.errors.exception_handler (malformed
criteria or a run not scored: 400 `invalid`; a wrong password: 400 with `fields.password`; a version
still generating or signed already: 409; too many refused signatures: 429)."""
from __future__ import annotations

from django.http import Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from common.pagination import paginated_response
from common.params import BIGINT_MAX
from common.schema import errors, paginated

from . import selectors
from .models import BuildStatus, Meaning
from .services import criteria_set, report_create, report_generate, report_sign
from .views import FILES, file_response


class ReportRunOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.CharField()
    scored_at = serializers.DateTimeField(allow_null=True)


class ReportReleaseOutput(serializers.Serializer):
    id = serializers.IntegerField()
    version = serializers.CharField()


class ReportCriterionOutput(serializers.Serializer):
    metric = serializers.CharField()
    model = serializers.CharField()
    op = serializers.ChoiceField(choices=[">=", ">", "<=", "<", "=="])
    threshold = serializers.FloatField()
    on = serializers.ChoiceField(choices=["value", "lo", "hi"])
    note = serializers.CharField()


class ReportCriteriaOutput(serializers.Serializer):
    number = serializers.IntegerField()
    criteria = ReportCriterionOutput(many=True)
    sha256 = serializers.CharField()
    reason = serializers.CharField()
    after_results = serializers.BooleanField(help_text="results existed when this version was recorded")
    results_evidence = serializers.ListField(child=serializers.CharField())
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()


class ReportVersionProgressOutput(serializers.Serializer):
    status = serializers.CharField()
    step = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    error = serializers.CharField()


class ReportCheckpointOutput(serializers.Serializer):
    id = serializers.IntegerField()
    seq = serializers.IntegerField()
    head_hash = serializers.CharField()
    reason = serializers.CharField()
    public_key = serializers.CharField()


class ReportSignatureOutput(serializers.Serializer):
    id = serializers.IntegerField()
    meaning = serializers.ChoiceField(choices=Meaning.values)
    statement = serializers.CharField()
    signer = serializers.CharField(source="signer.username", help_text="the signer's username")
    signer_name = serializers.CharField()
    signer_role = serializers.CharField()
    signed_at = serializers.DateTimeField()
    document_hash = serializers.CharField(help_text="the version's document hash it is bound to")
    pdf_sha256 = serializers.CharField(help_text="the version's PDF SHA-256 it is bound to")


class ReportVersionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    report = serializers.IntegerField(source="report_id")
    number = serializers.IntegerField()
    status = serializers.ChoiceField(choices=BuildStatus.values)
    error = serializers.CharField()
    criteria = serializers.IntegerField(source="criteria.number", allow_null=True, default=None,
                                        help_text="the acceptance-criteria version it was judged against")
    checkpoint = ReportCheckpointOutput(allow_null=True)
    document_hash = serializers.CharField()
    json_sha256 = serializers.CharField()
    html_sha256 = serializers.CharField()
    pdf_sha256 = serializers.CharField()
    summary = serializers.DictField(help_text="models, acceptance verdict and counts, file sizes")
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    ready_at = serializers.DateTimeField(allow_null=True)
    files = serializers.SerializerMethodField()

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "string", "format": "uri"}})
    def get_files(self, version) -> dict:
        if version.status != BuildStatus.READY:
            return {}
        return {fmt: reverse("reports:api-version-file", kwargs={"pk": version.pk, "fmt": fmt}) for fmt in FILES}


class ReportSignedCopyOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=BuildStatus.values)
    signatures = serializers.ListField(child=serializers.IntegerField(), help_text="the signatures it shows")
    pdf_sha256 = serializers.CharField()


class ReportVersionDetailOutput(ReportVersionOutput):
    progress = serializers.SerializerMethodField()
    signatures = serializers.SerializerMethodField()
    signed_copy = serializers.SerializerMethodField()

    @extend_schema_field(ReportVersionProgressOutput)
    def get_progress(self, version) -> dict:
        return ReportVersionProgressOutput(selectors.version_progress(pk=version.pk)).data

    @extend_schema_field(ReportSignatureOutput(many=True))
    def get_signatures(self, version) -> list:
        return ReportSignatureOutput(selectors.signature_list(version=version), many=True).data

    @extend_schema_field(ReportSignedCopyOutput(allow_null=True))
    def get_signed_copy(self, version) -> dict | None:
        copy = selectors.signed_copy_latest(version=version)
        return ReportSignedCopyOutput(copy).data if copy else None


class ReportOutput(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    runs = ReportRunOutput(many=True)
    release = ReportReleaseOutput(allow_null=True)
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()


class ReportListOutput(ReportOutput):
    latest_version = serializers.IntegerField(source="latest_number", allow_null=True)
    latest_status = serializers.CharField(allow_null=True)
    latest_verdict = serializers.CharField(allow_null=True)
    latest_signatures = serializers.IntegerField()


class ReportDetailOutput(ReportOutput):
    scope = serializers.CharField()
    out_of_scope = serializers.CharField()
    limitations = serializers.CharField()
    criteria = serializers.SerializerMethodField()
    versions = serializers.SerializerMethodField()

    @extend_schema_field(ReportCriteriaOutput(many=True))
    def get_criteria(self, report) -> list:
        return ReportCriteriaOutput(selectors.criteria_list(report=report), many=True).data

    @extend_schema_field(ReportVersionOutput(many=True))
    def get_versions(self, report) -> list:
        return ReportVersionOutput(selectors.version_list(report=report), many=True).data


class ReportCreateInput(serializers.Serializer):
    title = serializers.CharField(max_length=200)
    runs = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX), allow_empty=False,
                                 help_text="run ids")
    release = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                       max_value=BIGINT_MAX, help_text="a release id")
    scope = serializers.CharField(required=False, allow_blank=True, default="")
    out_of_scope = serializers.CharField(required=False, allow_blank=True, default="")
    limitations = serializers.CharField(required=False, allow_blank=True, default="")
    criteria = serializers.JSONField(required=False, default=None,
                                     help_text="[{metric, model, op, threshold, on?, note?}] (docs/reports.md)")
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class ReportCriteriaInput(serializers.Serializer):
    criteria = serializers.JSONField(help_text="[{metric, model, op, threshold, on?, note?}]; [] for none")
    reason = serializers.CharField(required=False, allow_blank=True, default="",
                                   help_text="why they change (required after the first version)")


class ReportSignInput(serializers.Serializer):
    meaning = serializers.ChoiceField(choices=Meaning.values)
    password = serializers.CharField(write_only=True, trim_whitespace=False,
                                     help_text="the signer's password, re-entered")


class ReportListApi(APIView):
    """GET the reports (newest first, paginated); POST creates one (the board): 201 and the report."""

    def get_permissions(self):
        cap = Capability.MANAGE_REPORTS if self.request.method == "POST" else Capability.VIEW_REPORTS
        return [HasCapability.of(cap)()]

    @extend_schema(responses=paginated(ReportListOutput))
    def get(self, request):
        return paginated_response(request, selectors.report_list(), ReportListOutput, view=self)

    @extend_schema(request=ReportCreateInput, responses={201: ReportDetailOutput})
    def post(self, request):
        data = ReportCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        runs, missing = selectors.run_list_by_ids(ids=values["runs"])
        if missing:
            raise serializers.ValidationError({"runs": [f"no run with id {', '.join(map(str, missing))}"]})
        release = None
        if values["release"] is not None:
            release = selectors.release_by_pk(pk=values["release"])
            if release is None:
                raise serializers.ValidationError({"release": [f"no release with id {values['release']}"]})
        report = report_create(actor=request.user, title=values["title"], runs=runs, release=release,
                               scope=values["scope"], out_of_scope=values["out_of_scope"],
                               limitations=values["limitations"], criteria=values["criteria"], reason=values["reason"])
        return Response(ReportDetailOutput(selectors.report_get(pk=report.pk)).data, status=status.HTTP_201_CREATED)


class ReportDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_REPORTS)]

    @extend_schema(responses=ReportDetailOutput)
    def get(self, request, pk: int):
        return Response(ReportDetailOutput(selectors.report_get(pk=pk)).data)


class ReportCriteriaApi(APIView):
    """Record a new version of the acceptance criteria: 201 and that version (flagged `after_results`
    when results existed)."""

    permission_classes = [HasCapability.of(Capability.MANAGE_REPORTS)]

    @extend_schema(request=ReportCriteriaInput, responses={201: ReportCriteriaOutput})
    def post(self, request, pk: int):
        data = ReportCriteriaInput(data=request.data)
        data.is_valid(raise_exception=True)
        row = criteria_set(report=selectors.report_get(pk=pk), actor=request.user,
                           criteria=data.validated_data["criteria"], reason=data.validated_data["reason"])
        return Response(ReportCriteriaOutput(row).data, status=status.HTTP_201_CREATED)


class ReportGenerateApi(APIView):
    """Generate a new version on a worker: 202 and the version (status `generating`); poll it."""

    permission_classes = [HasCapability.of(Capability.MANAGE_REPORTS)]

    @extend_schema(request=None, responses={202: ReportVersionDetailOutput, **errors(400, 409)})
    def post(self, request, pk: int):
        version = report_generate(report=selectors.report_get(pk=pk), actor=request.user)
        return Response(ReportVersionDetailOutput(selectors.version_get(pk=version.pk)).data,
                        status=status.HTTP_202_ACCEPTED)


class VersionDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_REPORTS)]

    @extend_schema(responses=ReportVersionDetailOutput)
    def get(self, request, pk: int):
        return Response(ReportVersionDetailOutput(selectors.version_get(pk=pk)).data)


class VersionSignApi(APIView):
    """Sign a ready version as the requesting user, password re-entered: 201 and the signature."""

    permission_classes = [HasCapability.of(Capability.SIGN_REPORTS)]

    @extend_schema(request=ReportSignInput, responses={201: ReportSignatureOutput, **errors(409, 429)})
    def post(self, request, pk: int):
        data = ReportSignInput(data=request.data)
        data.is_valid(raise_exception=True)
        signature = report_sign(version=selectors.version_get(pk=pk), user=request.user,
                                password=data.validated_data["password"], meaning=data.validated_data["meaning"])
        return Response(ReportSignatureOutput(signature).data, status=status.HTTP_201_CREATED)


class _FilesThenJsonErrors(BaseContentNegotiation):
    """The download answers its own bytes; errors answer JSON whatever the Accept header says."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None


class VersionFileApi(APIView):
    """A ready version's stored file (`pdf`, `json`, `html`), or `signed-pdf`: the latest signed copy."""

    permission_classes = [HasCapability.of(Capability.VIEW_REPORTS)]
    content_negotiation_class = _FilesThenJsonErrors

    @extend_schema(
        operation_id="report_version_file",
        parameters=[OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=[*FILES, "signed-pdf"])],
        responses={(200, "application/pdf"): OpenApiTypes.BINARY, (200, "application/json"): OpenApiTypes.OBJECT,
                   (200, "text/html"): OpenApiTypes.STR})
    def get(self, request, pk: int, fmt: str):
        version = selectors.version_get(pk=pk)
        name = f"report-{version.report_id}-v{version.number}"
        if fmt == "signed-pdf":
            copy = selectors.signed_copy_latest(version=version, ready=True)
            if copy is None:
                raise Http404("no signed copy of this version is ready")
            return file_response(selectors.signed_copy_pdf(pk=copy.pk), "pdf",
                                 f"{name}-signed-{len(copy.signatures)}.pdf")
        if fmt not in FILES:
            raise Http404("formats: pdf, json, html, signed-pdf")
        data = selectors.version_file(pk=pk, field=FILES[fmt][0]) if version.status == BuildStatus.READY else None
        if data is None:
            raise Http404("this version has no files: it is not ready")
        return file_response(data, fmt, f"{name}.{fmt}")
