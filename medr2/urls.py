"""The project's routes: one include per app (each app's urls.py has its app_name and names its
routes `<app>:<entity>-<action>`, APIs `<app>:api-<entity>-<action>`), the API schema and the admin."""
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

urlpatterns = [
    path("", include("dashboard.urls")),
    path("", include("accounts.urls")),
    path("", include("annotation.urls")),
    path("", include("validity.urls")),
    path("", include("workers.urls")),
    path("", include("labelstudio.urls")),
    path("", include("adjudication.urls")),
    path("", include("releases.urls")),
    path("", include("finetune.urls")),
    path("", include("reports.urls")),
    path("", include("audit.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # the split view serves Swagger UI's start-up script as a file (?script): no inline script under the CSP
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("admin/", admin.site.urls),
]
# an unknown URL under /api/ answers the API's error shape, elsewhere the 404 page (common/errors.py)
handler404 = "common.errors.not_found"
