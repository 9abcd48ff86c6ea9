"""Label Studio: the readers' worklist, annotation batches, signed image links, webhook (pages and API)."""
from django.urls import path

from . import apis, views

app_name = "labelstudio"

urlpatterns = [
    path("annotate/", views.WorklistView.as_view(), name="worklist"),
    path("annotate/new/", views.BatchCreateView.as_view(), name="batch-create"),
    path("annotate/<int:pk>/", views.BatchDetailView.as_view(), name="batch-detail"),
    path("annotate/<int:pk>/tasks/<int:task_pk>/", views.TaskDetailView.as_view(), name="task-detail"),
    path("annotate/<int:pk>/<str:action>/", views.BatchActionView.as_view(), name="batch-action"),
    path("ls/images/<str:token>.png", views.LabelStudioImageView.as_view(), name="image"),
    path("api/annotation-batches/", apis.BatchListApi.as_view(), name="api-batch-list"),
    path("api/annotation-batches/<int:pk>/", apis.BatchDetailApi.as_view(), name="api-batch-detail"),
    path("api/annotation-batches/<int:pk>/tasks/", apis.BatchTasksApi.as_view(), name="api-batch-tasks"),
    path("api/annotation-batches/<int:pk>/sync-log/", apis.BatchSyncLogApi.as_view(), name="api-batch-sync-log"),
    path("api/annotation-batches/<int:pk>/<str:action>/", apis.BatchActionApi.as_view(), name="api-batch-action"),
    path("api/labelstudio/webhook/", views.webhook, name="api-webhook"),
]
