from django.urls import path

from . import apis, views

app_name = "reports"

urlpatterns = [
    path("reports/", views.ReportListView.as_view(), name="report-list"),
    path("reports/new/", views.ReportCreateView.as_view(), name="report-create"),
    path("reports/<int:pk>/", views.ReportDetailView.as_view(), name="report-detail"),
    path("reports/<int:pk>/criteria/", views.ReportCriteriaView.as_view(), name="report-criteria"),
    path("reports/<int:pk>/generate/", views.ReportGenerateView.as_view(), name="report-generate"),
    path("reports/versions/<int:pk>/", views.VersionDetailView.as_view(), name="version-detail"),
    path("reports/versions/<int:pk>/progress.json", views.VersionProgressView.as_view(), name="version-progress"),
    path("reports/versions/<int:pk>/report.<str:fmt>", views.VersionFileView.as_view(), name="version-file"),
    path("reports/versions/<int:pk>/sign/", views.VersionSignView.as_view(), name="version-sign"),
    path("reports/versions/<int:pk>/requeue/", views.VersionRequeueView.as_view(), name="version-requeue"),
    path("reports/signed/<int:pk>/signed-report.pdf", views.SignedCopyFileView.as_view(), name="copy-file"),
    path("api/reports/", apis.ReportListApi.as_view(), name="api-report-list"),
    path("api/reports/<int:pk>/", apis.ReportDetailApi.as_view(), name="api-report-detail"),
    path("api/reports/<int:pk>/criteria/", apis.ReportCriteriaApi.as_view(), name="api-report-criteria"),
    path("api/reports/<int:pk>/generate/", apis.ReportGenerateApi.as_view(), name="api-report-generate"),
    path("api/report-versions/<int:pk>/", apis.VersionDetailApi.as_view(), name="api-version-detail"),
    path("api/report-versions/<int:pk>/sign/", apis.VersionSignApi.as_view(), name="api-version-sign"),
    path("api/report-versions/<int:pk>/files/<str:fmt>/", apis.VersionFileApi.as_view(), name="api-version-file"),
]
