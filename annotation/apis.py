"""REST API (DRF): one class per operation, nested input/output serializers (HackSoft style)."""
from __future__ import annotations

from django.conf import settings
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from medr2.pagination import StandardPagination
from accounts.roles import Capability

from . import selectors
from .models import ImportBatch, Stage
from .services.images import BytesSource, ImportDefaults, images_import


class ImageOutput(serializers.Serializer):
    id = serializers.IntegerField()
    sha256 = serializers.CharField()
    width = serializers.IntegerField()
    height = serializers.IntegerField()
    modality = serializers.CharField()
    body_region = serializers.CharField()
    source_format = serializers.CharField()
    frame_index = serializers.IntegerField(allow_null=True)
    split_group = serializers.CharField()
    source_dataset = serializers.CharField()
    license = serializers.CharField()
    window_center = serializers.FloatField(allow_null=True)
    window_width = serializers.FloatField(allow_null=True)
    window_source = serializers.CharField()
    created_at = serializers.DateTimeField()


class ImageListApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_IMAGES)]

    def get(self, request):
        filters = {k: request.query_params.get(k, "") for k in (*selectors.IMAGE_FILTERS, "has_findings")}
        paginator = StandardPagination()
        page = paginator.paginate_queryset(selectors.image_list(user=request.user, filters=filters), request, view=self)
        return paginator.get_paginated_response(ImageOutput(page, many=True).data)


class ImageDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_IMAGES)]

    class Output(ImageOutput):
        class BoxOutput(serializers.Serializer):
            id = serializers.IntegerField()
            x0 = serializers.FloatField()
            y0 = serializers.FloatField()
            x1 = serializers.FloatField()
            y1 = serializers.FloatField()
            label = serializers.CharField()
            source = serializers.CharField()
            finding_id = serializers.IntegerField()
            author = serializers.CharField(source="author.username", allow_null=True, default=None)

        class FindingOutput(serializers.Serializer):
            id = serializers.IntegerField()
            kind = serializers.CharField()
            label = serializers.CharField()
            attributes = serializers.JSONField()
            source = serializers.CharField()

        deid = serializers.JSONField()
        metadata = serializers.JSONField()
        boxes = BoxOutput(source="active_boxes", many=True)
        findings = FindingOutput(source="active_findings", many=True)

    def get(self, request, pk: int):
        return Response(self.Output(selectors.image_get(user=request.user, pk=pk)).data)


class ImageUploadApi(APIView):
    """POST multipart `files` (one or more) with optional source_dataset, license, modality,
    body_region. 201 when at least one file was imported, 200 when all were duplicates,
    422 when every file failed; the body lists each file's outcome."""

    permission_classes = [HasCapability.of(Capability.IMPORT_IMAGES)]
    parser_classes = [MultiPartParser]

    class Input(serializers.Serializer):
        source_dataset = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
        license = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
        modality = serializers.CharField(max_length=16, required=False, default="", allow_blank=True)
        body_region = serializers.CharField(max_length=64, required=False, default="", allow_blank=True)

    class Output(serializers.Serializer):
        class FileOutput(serializers.Serializer):
            name = serializers.CharField()
            status = serializers.CharField()
            code = serializers.CharField()
            message = serializers.CharField()
            images_created = serializers.IntegerField()
            images_duplicate = serializers.IntegerField()

        batch_id = serializers.IntegerField(source="id")
        files_imported = serializers.IntegerField()
        files_duplicate = serializers.IntegerField()
        files_failed = serializers.IntegerField()
        images_created = serializers.IntegerField()
        files = FileOutput(many=True, source="files.all")

    def post(self, request):
        files = request.FILES.getlist("files")
        if not files:
            return Response({"detail": "no files: send one or more files in the multipart field 'files'"},
                            status=status.HTTP_400_BAD_REQUEST)
        too_big = [f.name for f in files if f.size > settings.MEDR2_UPLOAD_MAX_BYTES]
        if too_big:
            return Response({"detail": f"files over the {settings.MEDR2_UPLOAD_MAX_BYTES} byte upload limit: {too_big}"},
                            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        params = self.Input(data=request.data)
        params.is_valid(raise_exception=True)
        batch = images_import(
            sources=(BytesSource(f.name, f.read()) for f in files), actor=request.user,
            source=ImportBatch.Source.UPLOAD, defaults=ImportDefaults(**params.validated_data),
        )
        if batch.files_imported:
            code = status.HTTP_201_CREATED
        elif batch.files_duplicate:
            code = status.HTTP_200_OK
        else:
            code = status.HTTP_422_UNPROCESSABLE_ENTITY
        return Response(self.Output(batch).data, status=code)


class TaxonomyApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_DASHBOARD)]

    class Output(serializers.Serializer):
        class CategoryOutput(serializers.Serializer):
            code = serializers.CharField()
            name = serializers.CharField()
            answer_type = serializers.CharField()
            prompt_template = serializers.CharField()
            is_active = serializers.BooleanField()

        code = serializers.CharField()
        order = serializers.IntegerField()
        name = serializers.CharField()
        description = serializers.CharField()
        categories = CategoryOutput(many=True, source="categories.all")

    def get(self, request):
        stages = Stage.objects.prefetch_related("categories").order_by("order")
        return Response(self.Output(stages, many=True).data)
