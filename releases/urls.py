from django.urls import path

from . import apis, views

app_name = "releases"

urlpatterns = [
    path("releases/", views.ReleaseListView.as_view(), name="release-list"),
    path("releases/new/", views.ReleaseCreateView.as_view(), name="release-create"),
    path("releases/<int:pk>/", views.ReleaseDetailView.as_view(), name="release-detail"),
    path("releases/<int:pk>/build/", views.ReleaseBuildView.as_view(), name="release-build"),
    path("releases/<int:pk>/publish/", views.ReleasePublishView.as_view(), name="release-publish"),
    path("releases/<int:pk>/progress.json", views.ReleaseProgressView.as_view(), name="release-progress"),
    path("releases/<int:pk>/download.tar.gz", views.ReleaseDownloadView.as_view(), name="release-download"),
    path("api/releases/", apis.ReleaseListApi.as_view(), name="api-release-list"),
    path("api/releases/<int:pk>/", apis.ReleaseDetailApi.as_view(), name="api-release-detail"),
    path("api/releases/<int:pk>/build/", apis.ReleaseBuildApi.as_view(), name="api-release-build"),
    path("api/releases/<int:pk>/publish/", apis.ReleasePublishApi.as_view(), name="api-release-publish"),
]
