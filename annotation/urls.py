"""Benchmark content: images and their import, QA items, chains, variants, taxonomy (pages and API)."""
from django.urls import path

from . import apis, views

app_name = "annotation"

urlpatterns = [
    path("images/", views.ImageListView.as_view(), name="image-list"),
    path("images/assign/", views.ImageAssignView.as_view(), name="image-assign"),
    path("images/import/", views.ImportView.as_view(), name="image-import"),
    path("images/import/<int:pk>/", views.ImportBatchView.as_view(), name="import-batch"),
    path("images/import/<int:pk>/progress/", views.ImportBatchProgressView.as_view(), name="import-batch-progress"),
    path("images/<int:pk>/", views.ImageDetailView.as_view(), name="image-detail"),
    path("images/<int:pk>/file.png", views.ImageFileView.as_view(), name="image-file"),
    path("images/<int:pk>/pixels", views.ImagePixelsView.as_view(), name="image-pixels"),
    path("items/", views.ItemListView.as_view(), name="item-list"),
    path("items/review/", views.ItemReviewView.as_view(), name="item-review"),
    path("items/<int:pk>/", views.ItemDetailView.as_view(), name="item-detail"),
    path("items/<int:pk>/edit/", views.ItemEditView.as_view(), name="item-edit"),
    path("chains/<int:pk>/", views.ChainDetailView.as_view(), name="chain-detail"),
    path("variants/<int:pk>/image.png", views.VariantImageView.as_view(), name="variant-image"),
    path("taxonomy/", views.CategoryListView.as_view(), name="category-list"),
    path("taxonomy/new/", views.CategoryCreateView.as_view(), name="category-create"),
    path("taxonomy/<slug:code>/edit/", views.CategoryEditView.as_view(), name="category-edit"),
    path("api/images/", apis.ImageListApi.as_view(), name="api-image-list"),
    path("api/images/upload/", apis.ImageUploadApi.as_view(), name="api-image-upload"),
    path("api/images/assignments/", apis.ImageAssignApi.as_view(), name="api-image-assign"),
    path("api/images/<int:pk>/", apis.ImageDetailApi.as_view(), name="api-image-detail"),
    path("api/taxonomy/", apis.TaxonomyApi.as_view(), name="api-taxonomy"),
    path("api/items/", apis.ItemListApi.as_view(), name="api-item-list"),
    path("api/items/review/", apis.ItemReviewApi.as_view(), name="api-item-review"),
    path("api/items/<int:pk>/", apis.ItemDetailApi.as_view(), name="api-item-detail"),
    path("api/items/<int:pk>/variants/", apis.ItemVariantsApi.as_view(), name="api-item-variants"),
    path("api/chains/", apis.ChainListApi.as_view(), name="api-chain-list"),
    path("api/chains/<int:pk>/", apis.ChainDetailApi.as_view(), name="api-chain-detail"),
    path("api/variants/", apis.VariantListApi.as_view(), name="api-variant-list"),
    path("api/variants/<int:pk>/", apis.VariantDetailApi.as_view(), name="api-variant-detail"),
    path("api/variants/<int:pk>/image.png", apis.VariantImageApi.as_view(), name="api-variant-image"),
]
