"""REST API for the benchmark content: images and their upload, taxonomy, chains, QA items and
variants (DRF, documented by drf-spectacular at /api/schema/). One class per operation, nested
input/output serializers."""
from __future__ import annotations

from django.conf import settings
from django.http import FileResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import HasCapability
from accounts.roles import Capability
from accounts.selectors import user_find
from annotation import selectors
from annotation.models import QAItem, VariantKind
from annotation.services.assignment import images_assignment_change
from annotation.services.images import ImportDefaults, images_upload
from annotation.services.qa import REVIEW_STATUSES, qa_item_revise, qa_items_review
from annotation.services.variants import variant_image_path
from common.errors import NotFound, error_response
from common.pagination import paginated_response
from common.params import BIGINT_MAX, QueryParams
from common.schema import errors, paginated


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


IMAGE_FILTER_LENGTHS = {"modality": 16, "body_region": 64, "source_format": 16, "split_group": 64}


class ImageListApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_IMAGES)]

    @extend_schema(parameters=[
        *(OpenApiParameter(name, str, description=f"images whose {name} is this") for name in selectors.IMAGE_FILTERS),
        OpenApiParameter("has_findings", str, enum=["yes", "no"],
                         description="with or without active lesion findings (ignored for blind readers)")],
        responses=paginated(ImageOutput))
    def get(self, request):
        params = QueryParams(request.query_params)
        filters = {name: params.text(name, max_length=IMAGE_FILTER_LENGTHS[name]) for name in selectors.IMAGE_FILTERS}
        filters["has_findings"] = params.choice("has_findings", ["yes", "no"])
        params.check()
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

    @extend_schema(responses=Output)
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

    @extend_schema(
        request={"multipart/form-data": inline_serializer("ImageUploadRequest", fields={
            "files": serializers.ListField(child=serializers.FileField()), **Input().get_fields()})},
        responses={201: Output, 200: Output, 422: Output, **errors(400, 413)})
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
        batch = images_upload(files=files, actor=request.user, defaults=ImportDefaults(**params.validated_data))
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

    @extend_schema(responses=Output(many=True))
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


ITEM_FILTER_PARAMS = [
    OpenApiParameter("stage", str, description="stage code (S1–S4)"),
    OpenApiParameter("category", str, description="task category code"),
    OpenApiParameter("modality", str, description="the image's modality"),
    OpenApiParameter("status", str, enum=QAItem.Status.values),
    OpenApiParameter("image_necessary", str, enum=list(selectors.IMAGE_NECESSARY_VALUES),
                     description="set by the latest shortcut audit; unknown: never audited"),
    OpenApiParameter("chain", int, description="the chain's id"),
    OpenApiParameter("all_versions", bool, description="every version, not only the current ones"),
]


class ItemListApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_ITEMS)]

    @extend_schema(parameters=ITEM_FILTER_PARAMS, responses=paginated(ItemOutput))
    def get(self, request):
        params = QueryParams(request.query_params)
        filters = {"stage": params.text("stage", max_length=16), "category": params.text("category", max_length=64),
                   "modality": params.text("modality", max_length=16),
                   "status": params.choice("status", QAItem.Status.values),
                   "image_necessary": params.choice("image_necessary", selectors.IMAGE_NECESSARY_VALUES),
                   "chain": params.id("chain")}
        current_only = not params.boolean("all_versions")
        params.check()
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

    @extend_schema(request=ReviseInput, responses={201: ItemOutput})   # a refused revision: 400
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
        ids = serializers.ListField(child=serializers.IntegerField(max_value=BIGINT_MAX), min_length=1, max_length=5000)
        status = serializers.ChoiceField(choices=list(REVIEW_STATUSES))
        note = serializers.CharField(required=False, default="", allow_blank=True, max_length=500)

    class Output(serializers.Serializer):
        changed = serializers.IntegerField()

    @extend_schema(request=Input, responses={200: Output, **errors(404)})
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

    @extend_schema(parameters=[OpenApiParameter("image", int, description="the image's id"),
                               OpenApiParameter("seed", int)],
                   responses=paginated(Output))
    def get(self, request):
        params = QueryParams(request.query_params)
        image, seed = params.id("image"), params.integer("seed")
        params.check()
        qs = selectors.chain_list(user=request.user, image=image, seed=seed)
        return paginated_response(request, qs, self.Output, view=self)


class VariantListApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_ITEMS)]

    @extend_schema(parameters=[OpenApiParameter("kind", str, enum=VariantKind.values),
                               OpenApiParameter("item", int, description="the item version's id"),
                               OpenApiParameter("seed", int)],
                   responses=paginated(VariantOutput))
    def get(self, request):
        params = QueryParams(request.query_params)
        kind, item, seed = params.choice("kind", VariantKind.values), params.id("item"), params.integer("seed")
        params.check()
        qs = selectors.variant_search(user=request.user, kind=kind, item=item, seed=seed)
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
                                     "items": selectors.chain_items(chain=chain, user=request.user)}).data)


class ItemVariantsApi(APIView):
    permission_classes = [HasCapability.of(Capability.VIEW_ITEMS)]

    @extend_schema(responses=paginated(VariantOutput))
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


class ImageAssignApi(APIView):
    """POST {"user": username, "action": "assign" | "unassign", "images": [ids], "filters": {"modality",
    "body_region", "source_format", "split_group", "import_batch"}}: give a reader (annotator or
    adjudicator) the images named by ids and/or matching every filter, or take them away. Audited
    (`annotation.image.assign` / `.unassign`)."""

    permission_classes = [HasCapability.of(Capability.ASSIGN_IMAGES)]

    class Input(serializers.Serializer):
        class Filters(serializers.Serializer):
            modality = serializers.CharField(max_length=16, required=False, allow_blank=True)
            body_region = serializers.CharField(max_length=64, required=False, allow_blank=True)
            source_format = serializers.CharField(max_length=16, required=False, allow_blank=True)
            split_group = serializers.CharField(max_length=64, required=False, allow_blank=True)
            import_batch = serializers.IntegerField(min_value=1, max_value=2**63 - 1, required=False)

        user = serializers.CharField(max_length=150)
        action = serializers.ChoiceField(choices=["assign", "unassign"], default="assign")
        images = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=2**63 - 1),
                                       required=False, max_length=100_000)
        filters = Filters(required=False)

    class Output(serializers.Serializer):
        user = serializers.CharField()
        action = serializers.CharField()
        images = serializers.IntegerField(help_text="images assigned (all named) or unassigned (those removed)")
        assigned_now = serializers.IntegerField(help_text="images assigned to the user after the change")

    @extend_schema(request=Input, responses={200: Output, **errors(400, 403)})
    def post(self, request):
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        reader = user_find(username=d["user"])
        if reader is None:
            raise exceptions.ValidationError({"user": [f"no user is called {d['user']!r}"]})
        ids = d.get("images") or []
        if ids and (missing := sorted(set(ids) - set(selectors.images_to_assign(filters={}, ids=ids)
                                                        .values_list("pk", flat=True)))):
            raise exceptions.ValidationError({"images": [f"no image has the id(s) {missing[:20]}"]})
        images = selectors.images_to_assign(filters=d.get("filters") or {}, ids=ids)
        changed = images_assignment_change(reader=reader, images=images, assign=d["action"] == "assign",
                                           actor=request.user)
        return Response(self.Output({"user": reader.get_username(), "action": d["action"], "images": changed,
                                     "assigned_now": selectors.image_visible_to(reader).count()}).data)
