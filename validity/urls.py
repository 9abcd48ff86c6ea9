from django.urls import path

from . import apis, views

app_name = "validity"

urlpatterns = [
    path("validity/shortcuts/", views.AuditListView.as_view(), name="shortcut-list"),
    path("validity/shortcuts/new/", views.AuditCreateView.as_view(), name="shortcut-create"),
    path("validity/shortcuts/<int:pk>/", views.AuditDetailView.as_view(), name="shortcut-detail"),
    path("api/validity/shortcut-audits/", apis.ShortcutAuditListApi.as_view(), name="api-shortcut-audits"),
    path("api/validity/shortcut-audits/<int:pk>/", apis.ShortcutAuditDetailApi.as_view(), name="api-shortcut-audit"),
]
