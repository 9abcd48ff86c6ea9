"""REST API of releases (docs/releases.md): list, create, read, build, publish. Errors are answered by
common.errors.exception_handler (a bad version or an empty selection: 400 `invalid`; publishing an
unbuilt release: 400; changing a published one: 409)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from common.pagination import paginated_response
from common.schema import errors, paginated

from . import selectors
from .models import Release
from .services import release_build_later, release_create, release_publish


class PreviousOutput(serializers.ModelSerializer):
    class Meta:
        model = Release
        fields = ("id", "version")


class CountsOutput(serializers.Serializer):
    items = serializers.IntegerField(required=False)
    variants = serializers.IntegerField(required=False)
    images = serializers.IntegerField(required=False)
    stage = serializers.DictField(child=serializers.IntegerField(), required=False)
    category = serializers.DictField(child=serializers.IntegerField(), required=False)
    modality = serializers.DictField(child=serializers.IntegerField(), required=False)
    split = serializers.DictField(child=serializers.IntegerField(), required=False)


class ProgressOutput(serializers.Serializer):
    status = serializers.CharField()
    step = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    error = serializers.CharField()


class ChangeOutput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["added", "removed", "changed"])
    item_key = serializers.CharField()
    from_version = serializers.IntegerField(allow_null=True)
    to_version = serializers.IntegerField(allow_null=True)
    gold_changed = serializers.BooleanField(required=False)
    reason = serializers.CharField()


class ExcludedOutput(serializers.Serializer):
    left_out = serializers.DictField(child=serializers.IntegerField(), required=False,
                                     help_text="items left out, per reason")
    included_anyway = serializers.DictField(child=serializers.IntegerField(), required=False,
                                            help_text="items the admin included although they would be left out")


class ReleaseOutput(serializers.ModelSerializer):
    previous = PreviousOutput(read_only=True, allow_null=True)
    counts = CountsOutput(read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    published_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = Release
        fields = ("id", "name", "version", "title", "license", "status", "bump", "previous", "counts", "digest",
                  "archive_sha256", "archive_bytes", "public_key", "audit_head", "created_date", "created_by",
                  "created_at", "built_at", "published_at", "published_by")


class ReleaseDetailOutput(ReleaseOutput):
    excluded = ExcludedOutput(read_only=True)
    changes = ChangeOutput(many=True, read_only=True)
    progress = serializers.SerializerMethodField()

    class Meta(ReleaseOutput.Meta):
        fields = (*ReleaseOutput.Meta.fields, "description", "selection", "excluded", "changes", "taxonomy_version",
                  "reference_standard", "shortcut_audit", "progress", "error")

    @extend_schema_field(ProgressOutput)
    def get_progress(self, release) -> dict:
        return ProgressOutput(selectors.release_progress(pk=release.pk)).data


class FiltersInput(serializers.Serializer):
    """Which current approved items the release holds (empty: all of them)."""

    stage = serializers.CharField(required=False, allow_blank=True)
    category = serializers.CharField(required=False, allow_blank=True)
    modality = serializers.CharField(required=False, allow_blank=True)
    source_dataset = serializers.CharField(required=False, allow_blank=True)


class ReleaseCreateInput(serializers.Serializer):
    """A draft release: blank version = the semver rule picks it."""

    version = serializers.CharField(required=False, allow_blank=True, default="",
                                    help_text="MAJOR.MINOR.PATCH; blank: the semver rule picks it")
    title = serializers.CharField(required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    license = serializers.CharField(required=False, allow_blank=True, default="")
    filters = FiltersInput(required=False, default=dict)
    include = serializers.ListField(child=serializers.ChoiceField(choices=list(selectors.INCLUDABLE)), required=False,
                                    default=list, help_text="reasons to include items anyway")


class ReleaseListApi(APIView):
    """GET the releases (newest first, paginated); POST creates a draft (admins): 201 and the release."""

    def get_permissions(self):
        cap = Capability.MANAGE_RELEASES if self.request.method == "POST" else Capability.VIEW_RELEASES
        return [HasCapability.of(cap)()]

    @extend_schema(responses=paginated(ReleaseOutput))
    def get(self, request):
        return paginated_response(request, selectors.release_summaries(), ReleaseOutput, view=self)

    @extend_schema(request=ReleaseCreateInput, responses={201: ReleaseDetailOutput})
    def post(self, request):
        data = ReleaseCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        release = release_create(actor=request.user, version=values["version"].strip(), title=values["title"],
                                 description=values["description"], license=values["license"],
                                 filters=dict(values["filters"]), include=tuple(values["include"]))
        return Response(ReleaseDetailOutput(selectors.release_get(pk=release.pk, with_changes=True)).data,
                        status=status.HTTP_201_CREATED)


class ReleaseDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_RELEASES)]

    @extend_schema(responses=ReleaseDetailOutput)
    def get(self, request, pk: int):
        return Response(ReleaseDetailOutput(selectors.release_get(pk=pk, with_changes=True)).data)


class ReleaseBuildApi(APIView):
    """Queue the build on a worker: 202 and the release (status `building`); poll it for progress."""

    permission_classes = [HasCapability.of(Capability.MANAGE_RELEASES)]

    @extend_schema(request=None, responses={202: ReleaseDetailOutput, **errors(400, 409)})
    def post(self, request, pk: int):
        release_build_later(release=selectors.release_get(pk=pk), actor=request.user)
        return Response(ReleaseDetailOutput(selectors.release_get(pk=pk, with_changes=True)).data,
                        status=status.HTTP_202_ACCEPTED)


class ReleasePublishApi(APIView):
    """Publish a built release: it never changes afterwards (400 when not built, 409 when published)."""

    permission_classes = [HasCapability.of(Capability.MANAGE_RELEASES)]

    @extend_schema(request=None, responses={200: ReleaseDetailOutput, **errors(400, 409)})
    def post(self, request, pk: int):
        release = release_publish(release=selectors.release_get(pk=pk), actor=request.user)
        return Response(ReleaseDetailOutput(release).data)
