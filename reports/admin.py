"""Model reports in the Django admin: read-only. Reports, criteria, versions, signatures and signed
copies are written only by reports.services (the database refuses to change a ready version or a
signature); the files themselves are downloaded from the report pages, not here."""
from django.contrib import admin

from audit.admin import ReadOnlyModelAdmin

from .models import AcceptanceCriteria, Report, ReportSignature, ReportSignedCopy, ReportVersion


@admin.register(Report)
class ReportAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "title", "release", "created_by", "created_at")
    list_select_related = ("release", "created_by")
    search_fields = ("title",)
    raw_id_fields = ("release", "created_by")


@admin.register(AcceptanceCriteria)
class AcceptanceCriteriaAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "report", "number", "after_results", "created_by", "created_at")
    list_filter = ("after_results",)
    list_select_related = ("report", "created_by")
    raw_id_fields = ("report", "created_by")


@admin.register(ReportVersion)
class ReportVersionAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "report", "number", "status", "document_hash", "created_by", "created_at", "ready_at")
    list_filter = ("status",)
    list_select_related = ("report", "created_by")
    search_fields = ("document_hash", "pdf_sha256")
    raw_id_fields = ("report", "criteria", "checkpoint", "created_by")
    # the stored files (megabytes of bytes) are never loaded into the admin's list or form
    exclude = ("document_json", "html", "pdf")

    def get_queryset(self, request):
        return super().get_queryset(request).defer("document_json", "html", "pdf")


@admin.register(ReportSignature)
class ReportSignatureAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "version", "signer_name", "signer_role", "meaning", "signed_at")
    list_filter = ("meaning",)
    list_select_related = ("version",)
    raw_id_fields = ("version", "signer")


@admin.register(ReportSignedCopy)
class ReportSignedCopyAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "version", "status", "pdf_sha256", "created_at", "ready_at")
    list_filter = ("status",)
    list_select_related = ("version",)
    raw_id_fields = ("version",)
    exclude = ("pdf",)

    def get_queryset(self, request):
        return super().get_queryset(request).defer("pdf")
