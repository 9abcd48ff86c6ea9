"""Adjudication: the queue, the case page, assignment, agreement (pages and API)."""
from django.urls import path

from . import apis, views

app_name = "adjudication"

urlpatterns = [
    path("adjudication/", views.QueueView.as_view(), name="queue"),
    path("adjudication/next/", views.NextCaseView.as_view(), name="next"),
    path("adjudication/agreement/", views.AgreementView.as_view(), name="agreement"),
    path("adjudication/cases/<int:pk>/", views.CaseDetailView.as_view(), name="case-detail"),
    path("adjudication/cases/<int:pk>/image.png", views.CaseImageView.as_view(), name="case-image"),
    path("adjudication/cases/<int:pk>/pixels", views.CasePixelsView.as_view(), name="case-pixels"),
    path("adjudication/cases/<int:pk>/variants/<int:variant_pk>.png", views.CaseVariantImageView.as_view(),
         name="case-variant-image"),
    path("adjudication/cases/<int:pk>/assign/", views.CaseAssignView.as_view(), name="case-assign"),
    path("api/adjudication/cases/", apis.CaseListApi.as_view(), name="api-case-list"),
    path("api/adjudication/cases/assign/", apis.CaseAssignApi.as_view(), name="api-case-assign"),
    path("api/adjudication/cases/<int:pk>/", apis.CaseDetailApi.as_view(), name="api-case-detail"),
    path("api/adjudication/cases/<int:pk>/verdict/", apis.CaseVerdictApi.as_view(), name="api-case-verdict"),
]
