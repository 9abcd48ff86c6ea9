from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from annotation import apis as annotation_apis
from annotation import views as annotation_views
from audit import apis as audit_apis
from audit import views as audit_views

urlpatterns = [
    path("", annotation_views.DashboardView.as_view(), name="dashboard"),
    path("login/", auth_views.LoginView.as_view(template_name="accounts/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("images/", annotation_views.ImageListView.as_view(), name="image-list"),
    path("images/import/", annotation_views.ImportView.as_view(), name="image-import"),
    path("images/import/<int:pk>/", annotation_views.ImportBatchView.as_view(), name="import-batch"),
    path("images/<int:pk>/", annotation_views.ImageDetailView.as_view(), name="image-detail"),
    path("images/<int:pk>/file.png", annotation_views.ImageFileView.as_view(), name="image-file"),
    path("audit/", audit_views.AuditEventListView.as_view(), name="audit-list"),
    path("audit/verify/", audit_views.AuditVerifyView.as_view(), name="audit-verify"),
    path("api/images/", annotation_apis.ImageListApi.as_view(), name="api-image-list"),
    path("api/images/upload/", annotation_apis.ImageUploadApi.as_view(), name="api-image-upload"),
    path("api/images/<int:pk>/", annotation_apis.ImageDetailApi.as_view(), name="api-image-detail"),
    path("api/taxonomy/", annotation_apis.TaxonomyApi.as_view(), name="api-taxonomy"),
    path("api/audit/events/", audit_apis.AuditEventListApi.as_view(), name="api-audit-events"),
    path("api/audit/verify/", audit_apis.AuditVerifyApi.as_view(), name="api-audit-verify"),
    path("admin/", admin.site.urls),
]
