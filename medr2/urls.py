from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation import apis as annotation_apis
from annotation import curation_views, item_apis, labelstudio_apis, labelstudio_views
from annotation import views as annotation_views
from audit import apis as audit_apis
from audit import views as audit_views
from workers import apis as worker_apis
from workers import views as worker_views

urlpatterns = [
    path("", annotation_views.DashboardView.as_view(), name="dashboard"),
    path("login/", auth_views.LoginView.as_view(template_name="accounts/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("images/", annotation_views.ImageListView.as_view(), name="image-list"),
    path("images/import/", annotation_views.ImportView.as_view(), name="image-import"),
    path("images/import/<int:pk>/", annotation_views.ImportBatchView.as_view(), name="import-batch"),
    path("images/<int:pk>/", annotation_views.ImageDetailView.as_view(), name="image-detail"),
    path("images/<int:pk>/file.png", annotation_views.ImageFileView.as_view(), name="image-file"),
    path("items/", curation_views.ItemListView.as_view(), name="item-list"),
    path("items/review/", curation_views.ItemReviewView.as_view(), name="item-review"),
    path("items/<int:pk>/", curation_views.ItemDetailView.as_view(), name="item-detail"),
    path("items/<int:pk>/edit/", curation_views.ItemEditView.as_view(), name="item-edit"),
    path("chains/<int:pk>/", curation_views.ChainDetailView.as_view(), name="chain-detail"),
    path("variants/<int:pk>/image.png", curation_views.VariantImageView.as_view(), name="variant-image"),
    path("taxonomy/", curation_views.CategoryListView.as_view(), name="category-list"),
    path("taxonomy/new/", curation_views.CategoryCreateView.as_view(), name="category-create"),
    path("taxonomy/<slug:code>/edit/", curation_views.CategoryEditView.as_view(), name="category-edit"),
    path("models/", worker_views.EndpointListView.as_view(), name="endpoint-list"),
    path("models/new/", worker_views.EndpointCreateView.as_view(), name="endpoint-create"),
    path("runs/", worker_views.RunListView.as_view(), name="run-list"),
    path("runs/new/", worker_views.RunCreateView.as_view(), name="run-create"),
    path("runs/<int:pk>/", worker_views.RunDetailView.as_view(), name="run-detail"),
    path("runs/<int:pk>/progress.json", worker_views.RunProgressView.as_view(), name="run-progress"),
    path("runs/<int:pk>/predictions/", worker_views.PredictionListView.as_view(), name="run-predictions"),
    path("runs/<int:pk>/results.<str:fmt>", worker_views.RunExportView.as_view(), name="run-export"),
    path("runs/<int:pk>/<str:action>/", worker_views.RunActionView.as_view(), name="run-action"),
    path("annotate/", labelstudio_views.WorklistView.as_view(), name="worklist"),
    path("annotate/new/", labelstudio_views.BatchCreateView.as_view(), name="annotation-batch-create"),
    path("annotate/<int:pk>/", labelstudio_views.BatchDetailView.as_view(), name="annotation-batch"),
    path("annotate/<int:pk>/tasks/<int:task_pk>/", labelstudio_views.TaskDetailView.as_view(),
         name="annotation-task"),
    path("annotate/<int:pk>/<str:action>/", labelstudio_views.BatchActionView.as_view(), name="annotation-batch-action"),
    path("ls/images/<str:token>.png", labelstudio_views.LabelStudioImageView.as_view(), name="ls-image"),
    path("audit/", audit_views.AuditEventListView.as_view(), name="audit-list"),
    path("audit/verify/", audit_views.AuditVerifyView.as_view(), name="audit-verify"),
    path("api/images/", annotation_apis.ImageListApi.as_view(), name="api-image-list"),
    path("api/images/upload/", annotation_apis.ImageUploadApi.as_view(), name="api-image-upload"),
    path("api/images/<int:pk>/", annotation_apis.ImageDetailApi.as_view(), name="api-image-detail"),
    path("api/taxonomy/", annotation_apis.TaxonomyApi.as_view(), name="api-taxonomy"),
    path("api/items/", item_apis.ItemListApi.as_view(), name="api-item-list"),
    path("api/items/review/", item_apis.ItemReviewApi.as_view(), name="api-item-review"),
    path("api/items/<int:pk>/", item_apis.ItemDetailApi.as_view(), name="api-item-detail"),
    path("api/items/<int:pk>/variants/", item_apis.ItemVariantsApi.as_view(), name="api-item-variants"),
    path("api/chains/", item_apis.ChainListApi.as_view(), name="api-chain-list"),
    path("api/variants/", item_apis.VariantListApi.as_view(), name="api-variant-list"),
    path("api/chains/<int:pk>/", item_apis.ChainDetailApi.as_view(), name="api-chain-detail"),
    path("api/variants/<int:pk>/", item_apis.VariantDetailApi.as_view(), name="api-variant-detail"),
    path("api/variants/<int:pk>/image.png", item_apis.VariantImageApi.as_view(), name="api-variant-image"),
    path("api/models/", worker_apis.EndpointListApi.as_view(), name="api-endpoint-list"),
    path("api/runs/", worker_apis.RunListApi.as_view(), name="api-run-list"),
    path("api/runs/<int:pk>/", worker_apis.RunDetailApi.as_view(), name="api-run-detail"),
    path("api/runs/<int:pk>/results/", worker_apis.RunResultsApi.as_view(), name="api-run-results"),
    path("api/runs/<int:pk>/predictions/", worker_apis.PredictionListApi.as_view(), name="api-run-predictions"),
    path("api/runs/<int:pk>/<str:action>/", worker_apis.RunActionApi.as_view(), name="api-run-action"),
    path("api/annotation-batches/", labelstudio_apis.BatchListApi.as_view(), name="api-annotation-batch-list"),
    path("api/annotation-batches/<int:pk>/", labelstudio_apis.BatchDetailApi.as_view(), name="api-annotation-batch"),
    path("api/annotation-batches/<int:pk>/tasks/", labelstudio_apis.BatchTasksApi.as_view(),
         name="api-annotation-batch-tasks"),
    path("api/annotation-batches/<int:pk>/sync-log/", labelstudio_apis.BatchSyncLogApi.as_view(),
         name="api-annotation-batch-sync-log"),
    path("api/annotation-batches/<int:pk>/<str:action>/", labelstudio_apis.BatchActionApi.as_view(),
         name="api-annotation-batch-action"),
    path("api/labelstudio/webhook/", labelstudio_views.webhook, name="api-ls-webhook"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/audit/events/", audit_apis.AuditEventListApi.as_view(), name="api-audit-events"),
    path("api/audit/verify/", audit_apis.AuditVerifyApi.as_view(), name="api-audit-verify"),
    path("admin/", admin.site.urls),
]
