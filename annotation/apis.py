"""REST API for the benchmark content: images and their upload, taxonomy, chains, QA items and
variants (DRF, documented by drf-spectacular at /api/schema/). One class per operation, nested
input/output serializers."""
from __future__ import annotations

from django.conf import settings
from django.http import FileResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from annotation import selectors
from annotation.models import ImportBatch
from annotation.services.images import BytesSource, ImportDefaults, images_import
from annotation.services.qa import REVIEW_STATUSES, qa_item_revise, qa_items_review
from annotation.services.variants import variant_image_path
from common.errors import NotFound, error_response
from common.pagination import paginated_response


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
        return paginated_response(request, selectors.image_list(user=request.user, filters=filters), ImageOutput,
                                  view=self)


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
            raise exceptions.ValidationError({"files": ["send one or more files in the multipart field 'files'"]})
        too_big = [f.name for f in files if f.size > settings.MEDR2_UPLOAD_MAX_BYTES]
        if too_big:
            return error_response(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
                                  f"files over the {settings.MEDR2_UPLOAD_MAX_BYTES} byte upload limit: {too_big}")
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
        return Response(self.Output(selectors.stage_list(with_categories=True), many=True).data)


class ItemOutput(serializers.Serializer):
    id = serializers.IntegerField()
    item_key = serializers.UUIDField()
    version = serializers.IntegerField()
    is_current = serializers.BooleanField()
    chain_id = serializers.IntegerField()
    image_id = serializers.IntegerField(source="chain.image_id")
    step = serializers.IntegerField()
    stage = serializers.CharField(source="stage.code")
    category = serializers.CharField(source="category.code")
    answer_type = serializers.CharField(source="category.answer_type")
    question = serializers.CharField()
    options = serializers.JSONField()
    gold_answer = serializers.JSONField()
    evidence_box_ids = serializers.SerializerMethodField()
    status = serializers.CharField()
    content_hash = serializers.CharField()
    change_reason = serializers.CharField()
    image_necessary = serializers.BooleanField(allow_null=True,
                                               help_text="set by the latest shortcut audit (validity/)")
    created_at = serializers.DateTimeField()

    def get_evidence_box_ids(self, item) -> list[int]:
        return sorted(b.pk for b in item.evidence_boxes.all())


class VariantOutput(serializers.Serializer):
    id = serializers.IntegerField()
    item_id = serializers.IntegerField()
    kind = serializers.CharField()
    params = serializers.JSONField()
    seed = serializers.IntegerField()
    parent_id = serializers.IntegerField(allow_null=True)
    prompt = serializers.CharField()
    options = serializers.JSONField()
    expected_answer = serializers.JSONField()
    image_recipe = serializers.JSONField(allow_null=True)
    content_hash = serializers.CharField()


ITEM_FILTER_PARAMS = [OpenApiParameter(name, str, description=f"filter by {name}")
                      for name in (*selectors.ITEM_FILTERS, "chain")]


class ItemListApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_ITEMS)]

    @extend_schema(parameters=[*ITEM_FILTER_PARAMS, OpenApiParameter("all_versions", bool)],
                   responses=ItemOutput(many=True))
    def get(self, request):
        filters = {k: request.query_params.get(k, "") for k in (*selectors.ITEM_FILTERS, "chain")}
        current_only = request.query_params.get("all_versions", "").lower() not in ("1", "true", "yes")
        qs = selectors.item_list(user=request.user, filters=filters, current_only=current_only, with_evidence=True)
        return paginated_response(request, qs, ItemOutput, view=self)


class ItemDetailApi(APIView):
    """GET one item version; PATCH creates the next version (the old one stays readable)."""

    class ReviseInput(serializers.Serializer):
        question = serializers.CharField(required=False)
        options = serializers.ListField(child=serializers.JSONField(), required=False)
        gold_answer = serializers.JSONField(required=False)
        reason = serializers.CharField(max_length=300)

    def get_permissions(self):
        capability = Capability.EDIT_ITEMS if self.request.method == "PATCH" else Capability.VIEW_ITEMS
        return [HasCapability.of(capability)()]

    @extend_schema(responses=ItemOutput)
    def get(self, request, pk: int):
        return Response(ItemOutput(selectors.item_get(user=request.user, pk=pk)).data)

    @extend_schema(request=ReviseInput, responses={201: ItemOutput})
    def patch(self, request, pk: int):
        data = self.ReviseInput(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        reason = changes.pop("reason")
        item = selectors.item_get(user=request.user, pk=pk)
        new = qa_item_revise(item=item, actor=request.user, reason=reason, **changes)
        return Response(ItemOutput(new).data, status=status.HTTP_201_CREATED)


class ItemReviewApi(APIView):
    permission_classes = [HasCapability.of(Capability.EDIT_ITEMS)]

    class Input(serializers.Serializer):
        ids = serializers.ListField(child=serializers.IntegerField(), min_length=1, max_length=5000)
        status = serializers.ChoiceField(choices=list(REVIEW_STATUSES))
        note = serializers.CharField(required=False, default="", allow_blank=True, max_length=500)

    class Output(serializers.Serializer):
        changed = serializers.IntegerField()

    @extend_schema(request=Input, responses=Output)
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        ids = data.validated_data["ids"]
        unknown = sorted(set(ids) - selectors.item_ids_visible(user=request.user, ids=ids))
        if unknown:
            raise NotFound(f"no items with ids {unknown}")
        changed = qa_items_review(item_ids=ids, status=data.validated_data["status"], actor=request.user,
                                  note=data.validated_data["note"])
        return Response({"changed": changed})


class ChainListApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_ITEMS)]

    class Output(serializers.Serializer):
        id = serializers.IntegerField()
        image_id = serializers.IntegerField()
        seed = serializers.IntegerField()
        n_items = serializers.IntegerField()
        created_at = serializers.DateTimeField()

    @extend_schema(parameters=[OpenApiParameter("image", int), OpenApiParameter("seed", int)],
                   responses=Output(many=True))
    def get(self, request):
        qs = selectors.chain_list(user=request.user, image=request.query_params.get("image", ""),
                                  seed=request.query_params.get("seed", ""))
        return paginated_response(request, qs, self.Output, view=self)


class VariantListApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_ITEMS)]

    @extend_schema(parameters=[OpenApiParameter("kind", str), OpenApiParameter("item", int),
                               OpenApiParameter("seed", int)],
                   responses=VariantOutput(many=True))
    def get(self, request):
        params = request.query_params
        qs = selectors.variant_search(user=request.user, kind=params.get("kind", ""), item=params.get("item", ""),
                                      seed=params.get("seed", ""))
        return paginated_response(request, qs, VariantOutput, view=self)


class ChainDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_ITEMS)]

    class Output(serializers.Serializer):
        id = serializers.IntegerField()
        image_id = serializers.IntegerField()
        seed = serializers.IntegerField()
        items = ItemOutput(many=True)

    @extend_schema(responses=Output)
    def get(self, request, pk: int):
        chain = selectors.chain_get(user=request.user, pk=pk)
        return Response(self.Output({"id": chain.pk, "image_id": chain.image_id, "seed": chain.seed,
                                     "items": selectors.chain_items(chain=chain)}).data)


class ItemVariantsApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_ITEMS)]

    @extend_schema(responses=VariantOutput(many=True))
    def get(self, request, pk: int):
        item = selectors.item_get(user=request.user, pk=pk)
        return paginated_response(request, selectors.variant_list(item=item), VariantOutput, view=self)


class VariantDetailApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_ITEMS)]

    @extend_schema(responses=VariantOutput)
    def get(self, request, pk: int):
        return Response(VariantOutput(selectors.variant_get(user=request.user, pk=pk)).data)


class VariantImageApi(APIView):
    """The PNG a model sees for this variant (rendered exactly from its recipe, cached)."""

    permission_classes = [HasCapability.of(Capability.VIEW_ITEMS)]

    @extend_schema(responses={(200, "image/png"): bytes})
    def get(self, request, pk: int):
        variant = selectors.variant_get(user=request.user, pk=pk)
        return FileResponse(open(variant_image_path(variant), "rb"), content_type="image/png")
