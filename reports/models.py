"""A model report's lifecycle (docs/reports.md): the report a governance board asked for, its acceptance
criteria (versioned, recorded before results where possible), its immutable generated versions, and the
electronic signatures bound to a version's content hash.

Rows are written only through `reports.services`, every write audited. What the database itself refuses
(migration 0002, PostgreSQL triggers; SQLite, the demo, has equivalents):

- `AcceptanceCriteria` and `ReportSignature` rows are never updated or deleted;
- a `ReportVersion` or `ReportSignedCopy` that is `ready` or `failed` is never updated or deleted.

The version's files are stored in the database (`BinaryField`), not under a folder: they are a few
megabytes at most, the immutability trigger then covers the bytes themselves (a file on disk could be
swapped behind the row's hash), they are in every database backup with the signatures that bind to them,
and a failed build leaves no orphan file."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from audit.models import AuditCheckpoint
from releases.models import Release
from workers.models import EvaluationRun


class Meaning(models.TextChoices):
    """What a signature says (the statements are `reports.document.SIGN_OFF_MEANINGS`)."""

    AUTHOR = "author", "author"
    REVIEWER = "reviewer", "reviewer"
    APPROVER = "approver", "approver"


class BuildStatus(models.TextChoices):
    GENERATING = "generating", "generating"
    READY = "ready", "ready"
    FAILED = "failed", "failed"


class Report(models.Model):
    """What the board asked for: which runs (and release), the requester's scope, out-of-scope and
    limitations text. Its numbers live in its versions."""

    title = models.CharField(max_length=200)
    scope = models.TextField(blank=True, help_text="scope and intended use, as the requester states it")
    out_of_scope = models.TextField(blank=True, help_text="what the report does not cover")
    limitations = models.TextField(blank=True, help_text="the author's limitations text")
    runs = models.ManyToManyField(EvaluationRun, related_name="+")
    release = models.ForeignKey(Release, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"report {self.pk}: {self.title}"


class AcceptanceCriteria(models.Model):
    """One version of a report's acceptance criteria (reports.criteria): a change is a new row. A row
    recorded when results already existed (a run of the report scored, or a version generated) says so,
    and every report version generated with it shows it."""

    report = models.ForeignKey(Report, on_delete=models.PROTECT, related_name="criteria_versions")
    number = models.PositiveIntegerField(help_text="1, 2, … per report")
    criteria = models.JSONField(default=list, help_text="normalised: [{metric, model, op, threshold, on, note}]")
    sha256 = models.CharField(max_length=64, help_text="SHA-256 of the criteria's canonical JSON")
    reason = models.TextField(blank=True, help_text="why they were set or changed")
    after_results = models.BooleanField(default=False, help_text="results existed when they were recorded")
    results_evidence = models.JSONField(default=list, blank=True,
                                        help_text="which results existed then (scored runs, generated versions)")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["report_id", "number"]
        constraints = [models.UniqueConstraint(fields=["report", "number"], name="report_criteria_number_once")]
        verbose_name = "acceptance criteria"
        verbose_name_plural = "acceptance criteria"

    def __str__(self) -> str:
        return f"report {self.report_id} criteria v{self.number}"


class ReportVersion(models.Model):
    """One generated version of a report: the canonical JSON of every number, its HTML and its PDF, and
    their SHA-256. Built on a worker (`status` generating → ready or failed, with live `progress`);
    never changed once ready. `document_hash` is what signatures bind to."""

    report = models.ForeignKey(Report, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField(help_text="1, 2, … per report")
    status = models.CharField(max_length=12, choices=BuildStatus.choices, default=BuildStatus.GENERATING,
                              db_index=True)
    progress = models.JSONField(default=dict, blank=True, help_text="live build progress: step, done, total")
    error = models.TextField(blank=True)
    criteria = models.ForeignKey(AcceptanceCriteria, null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+", help_text="the criteria version it was judged against")
    checkpoint = models.ForeignKey(AuditCheckpoint, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+", help_text="the signed audit checkpoint written for it")
    document_json = models.BinaryField(null=True, blank=True, editable=False,
                                       help_text="canonical JSON (UTF-8): its SHA-256 is the document hash")
    html = models.BinaryField(null=True, blank=True, editable=False, help_text="standalone HTML (UTF-8)")
    pdf = models.BinaryField(null=True, blank=True, editable=False)
    json_sha256 = models.CharField(max_length=64, blank=True)
    html_sha256 = models.CharField(max_length=64, blank=True)
    pdf_sha256 = models.CharField(max_length=64, blank=True)
    document_hash = models.CharField(max_length=64, blank=True, db_index=True)
    summary = models.JSONField(default=dict, blank=True,
                               help_text="for lists: models, acceptance verdict, pages' sizes")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    ready_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["report_id", "-number"]
        constraints = [models.UniqueConstraint(fields=["report", "number"], name="report_version_number_once")]
        indexes = [models.Index(fields=["pdf_sha256"], name="report_version_pdf_sha"),
                   models.Index(fields=["json_sha256"], name="report_version_json_sha")]

    def __str__(self) -> str:
        return f"report {self.report_id} v{self.number}"

    @property
    def is_ready(self) -> bool:
        return self.status == BuildStatus.READY


class ReportSignature(models.Model):
    """An electronic signature of one report version: who (name and role as they were at signing), when,
    meaning what, bound to the version's document hash and PDF SHA-256. Never edited, never moved to
    another version; the password was re-entered to make it."""

    version = models.ForeignKey(ReportVersion, on_delete=models.PROTECT, related_name="signatures")
    signer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    signer_name = models.CharField(max_length=300, help_text="full name (or username) at signing time")
    signer_role = models.CharField(max_length=120, help_text="the signer's roles at signing time")
    meaning = models.CharField(max_length=10, choices=Meaning.choices)
    statement = models.TextField(help_text="the statement the signer signed")
    signed_at = models.DateTimeField()
    document_hash = models.CharField(max_length=64, help_text="the version's document hash it is bound to")
    pdf_sha256 = models.CharField(max_length=64, help_text="the version's PDF SHA-256 it is bound to")

    class Meta:
        ordering = ["version_id", "signed_at", "id"]
        # one signature per person per version: the author does not also review or approve it
        constraints = [models.UniqueConstraint(fields=["version", "signer"], name="report_signature_once")]

    def __str__(self) -> str:
        return f"{self.meaning} signature of report version {self.version_id} by {self.signer_name}"


class ReportSignedCopy(models.Model):
    """The version's PDF rendered again with its sign-off page filled in: the signatures listed in
    `signatures` (ids). Made on a worker after each signature; never changed once ready. Its SHA-256 is
    verified by `report_verify` like the version's own files."""

    version = models.ForeignKey(ReportVersion, on_delete=models.PROTECT, related_name="signed_copies")
    signatures = models.JSONField(default=list, help_text="ids of the signatures on its sign-off page")
    status = models.CharField(max_length=12, choices=BuildStatus.choices, default=BuildStatus.GENERATING)
    pdf = models.BinaryField(null=True, blank=True, editable=False)
    pdf_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    document_hash = models.CharField(max_length=64, help_text="the version's document hash at rendering")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    ready_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["version_id", "-id"]
        verbose_name = "signed report copy"
        verbose_name_plural = "signed report copies"

    def __str__(self) -> str:
        return f"signed copy {self.pk} of report version {self.version_id} ({len(self.signatures)} signatures)"
