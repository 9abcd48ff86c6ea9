"""The project's routes: one include per app (each app's urls.py has its app_name and names its
routes `<app>:<entity>-<action>`, APIs `<app>:api-<entity>-<action>`), the API schema and the admin."""
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

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
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("admin/", admin.site.urls),
]
