"""The audit trail: events and chain verification (pages and API)."""
from django.urls import path

from . import apis, views

app_name = "audit"

urlpatterns = [
    path("audit/", views.AuditEventListView.as_view(), name="event-list"),
    path("audit/verify/", views.AuditVerifyView.as_view(), name="verify"),
    path("api/audit/events/", apis.AuditEventListApi.as_view(), name="api-event-list"),
    path("api/audit/verify/", apis.AuditVerifyApi.as_view(), name="api-verify"),
]
