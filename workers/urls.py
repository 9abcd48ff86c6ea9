"""Models and evaluation runs (pages and API)."""
from django.urls import path

from . import apis, views

app_name = "workers"

urlpatterns = [
    path("models/", views.EndpointListView.as_view(), name="model-list"),
    path("models/new/", views.EndpointCreateView.as_view(), name="model-create"),
    path("runs/", views.RunListView.as_view(), name="run-list"),
    path("runs/new/", views.RunCreateView.as_view(), name="run-create"),
    path("runs/<int:pk>/", views.RunDetailView.as_view(), name="run-detail"),
    path("runs/<int:pk>/progress.json", views.RunProgressView.as_view(), name="run-progress"),
    path("runs/<int:pk>/predictions/", views.PredictionListView.as_view(), name="run-predictions"),
    path("runs/<int:pk>/results.<str:fmt>", views.RunExportView.as_view(), name="run-export"),
    path("runs/<int:pk>/reference/", views.RunReferenceView.as_view(), name="run-reference"),
    path("runs/<int:pk>/<str:action>/", views.RunActionView.as_view(), name="run-action"),
    path("api/models/", apis.EndpointListApi.as_view(), name="api-model-list"),
    path("api/runs/", apis.RunListApi.as_view(), name="api-run-list"),
    path("api/runs/preview/", apis.RunPreviewApi.as_view(), name="api-run-preview"),
    path("api/runs/<int:pk>/", apis.RunDetailApi.as_view(), name="api-run-detail"),
    path("api/runs/<int:pk>/results/", apis.RunResultsApi.as_view(), name="api-run-results"),
    path("api/runs/<int:pk>/predictions/", apis.PredictionListApi.as_view(), name="api-run-predictions"),
    path("api/runs/<int:pk>/reference/", apis.RunReferenceApi.as_view(), name="api-run-reference"),
    path("api/runs/<int:pk>/<str:action>/", apis.RunActionApi.as_view(), name="api-run-action"),
]
