"""The audit trail: events (filters, object history, export) and chain verification (pages and API)."""
from django.urls import path

from . import apis, views

app_name = "audit"

urlpatterns = [
    path("audit/", views.AuditEventListView.as_view(), name="event-list"),
    path("audit/export.<str:fmt>", views.AuditEventExportView.as_view(), name="event-export"),
    path("audit/verify/", views.AuditVerifyView.as_view(), name="verify"),
    path("api/audit/events/", apis.AuditEventListApi.as_view(), name="api-event-list"),
    path("api/audit/events/export.<str:fmt>", apis.AuditEventExportApi.as_view(), name="api-event-export"),
    path("api/audit/verify/", apis.AuditVerifyApi.as_view(), name="api-verify"),
]
