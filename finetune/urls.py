"""Fine-tuning jobs (pages and API) and the base vs fine-tuned comparison."""
from django.urls import path

from . import apis, compare_views, views

app_name = "finetune"

urlpatterns = [
    path("finetune/", views.JobListView.as_view(), name="job-list"),
    path("finetune/new/", views.JobCreateView.as_view(), name="job-create"),
    path("finetune/compare/", compare_views.ComparisonView.as_view(), name="compare"),
    path("finetune/<int:pk>/", views.JobDetailView.as_view(), name="job-detail"),
    path("finetune/<int:pk>/progress.json", views.JobProgressView.as_view(), name="job-progress"),
    path("finetune/<int:pk>/<str:action>/", views.JobActionView.as_view(), name="job-action"),
    path("api/finetune/jobs/", apis.JobListApi.as_view(), name="api-job-list"),
    path("api/finetune/jobs/<int:pk>/", apis.JobDetailApi.as_view(), name="api-job-detail"),
    path("api/finetune/jobs/<int:pk>/<str:action>/", apis.JobActionApi.as_view(), name="api-job-action"),
    path("api/finetune/compare/", compare_views.ComparisonApi.as_view(), name="api-compare"),
]
