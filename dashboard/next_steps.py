"""Each role's next steps on the start page: concrete counts and the page to act on, one panel per
role the user holds (docs/curation.md, "Start pages"). Reads only, a fixed number of small queries
per panel (counts over indexed columns), whatever the size of the benchmark; the counts over every QA item
come from the dashboard's counts (`dashboard_counts`, cached a minute per scope). Release rows come
without their heavy JSON (`releases.selectors.release_rows`: change lists run to megabytes).

Blinding: the annotator's panel names batches and task counts, never items, gold answers or models."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from django.urls import reverse

from accounts.roles import Capability, Role, user_can, user_roles
from adjudication.models import AdjudicationCase, CaseReading
from adjudication.selectors import cases_waiting_for
from annotation.models import ImportBatch
from annotation.selectors import dashboard_counts
from audit.models import AuditCheckpoint
from common.formatting import plural, when
from labelstudio.models import AnnotationBatch
from labelstudio.selectors import reader_worklist
from releases.models import Release
from releases.selectors import release_rows
from reports.models import BuildStatus, ReportVersion
from workers.models import EvaluationRun


@dataclass(frozen=True)
class Step:
    text: str                 # one sentence, with its counts
    url: str = ""             # where to act on it
    action: str = ""          # the link's words
    tone: str = "todo"        # todo (something waits), done (nothing waits), info, warn
    external: bool = False    # the link leaves the platform (Label Studio)


@dataclass
class Panel:
    role: Role
    title: str
    steps: list[Step] = field(default_factory=list)


def next_steps(*, user, waiting: dict | None = None) -> list[Panel]:
    """One panel per role of `user`, in the order of their daily work. `waiting`: the adjudicator's
    `cases_waiting_for`, when the caller has counted it already."""
    roles = user_roles(user)
    builders = ((Role.ANNOTATOR, "Annotation", _annotator),
                (Role.ADJUDICATOR, "Adjudication", partial(_adjudicator, waiting=waiting)),
                (Role.CURATOR, "Curation", _curator), (Role.AUDITOR, "Oversight", _auditor),
                (Role.ADMIN, "Administration", _admin))
    return [Panel(role=role, title=title, steps=build(user)) for role, title, build in builders if role in roles]


# --- annotators (and adjudicators who read Label Studio batches) ----------------------------------------------

def _reading_steps(user, *, when_empty: str) -> list[Step]:
    rows = reader_worklist(user=user)
    if not rows:
        return [Step(when_empty, tone="done")] if when_empty else []
    steps = []
    for row in rows:
        name = f"batch “{row.batch.name}”"
        if not row.n_waiting:
            continue
        if not row.in_label_studio:
            steps.append(Step(f"{plural(row.n_waiting, 'task')} in {name} will open in Label Studio once your curator "
                              f"has sent the batch there.", tone="info"))
        elif row.ls_url:
            steps.append(Step(f"{plural(row.n_waiting, 'task')} waiting in {name} ({row.n_mine} of {row.n_tasks} done "
                              f"by you).", url=row.ls_url, action="Open in Label Studio", external=True))
        else:
            steps.append(Step(f"{plural(row.n_waiting, 'task')} waiting in {name} ({row.n_mine} of {row.n_tasks} done "
                              f"by you): open the project in Label Studio.",
                              url=reverse("labelstudio:batch-detail", args=[row.batch.pk]), action="Batch page"))
    if not steps:
        done = sum(r.n_mine for r in rows)
        steps.append(Step(f"All your tasks are done ({plural(done, 'task')} in {plural(len(rows), 'batch')}). "
                          f"New batches appear here when your curator assigns them.", tone="done"))
    return steps


def _annotator(user) -> list[Step]:
    steps = _reading_steps(user, when_empty="Nothing is assigned to you yet: your curator will assign you a batch, "
                                            "and it will appear here and on your worklist.")
    images = dashboard_counts(user=user)["n_images"]     # the images assigned to them (cached a minute)
    if images:
        steps.append(Step(f"{plural(images, 'image')} assigned to you (to look at; you annotate them in Label "
                          f"Studio).", url=reverse("annotation:image-list"), action="Images", tone="info"))
    return steps


# --- adjudicators ----------------------------------------------------------------------------------------------

def _adjudicator(user, *, waiting: dict | None = None) -> list[Step]:
    waiting = waiting if waiting is not None else cases_waiting_for(user=user)
    steps = []
    if waiting["assigned"]:
        steps.append(Step(f"{plural(waiting['assigned'], 'case')} assigned to you.",
                          url=reverse("adjudication:next"), action="Start reading"))
    if waiting["unassigned"]:
        steps.append(Step(f"{plural(waiting['unassigned'], 'open case')} nobody reads yet that you may take.",
                          url=reverse("adjudication:queue") + "?status=open", action="Adjudication queue",
                          tone="todo" if not waiting["assigned"] else "info"))
    if not steps:
        steps.append(Step("No cases wait for you. Cases appear when a reference run disagrees with the gold or "
                          "the annotators disagree.", url=reverse("adjudication:queue"), action="Queue", tone="done"))
    return steps + _reading_steps(user, when_empty="")


# --- curators --------------------------------------------------------------------------------------------------

def _curator(user) -> list[Step]:
    return [*_review_steps(user), *_import_steps(user), *_annotation_steps(), *_run_steps(), *_case_steps(),
            *_release_steps(user)]


def _review_steps(user) -> list[Step]:
    # curators see every image, so these are every current item's (the dashboard's counts, cached a minute)
    counts = dashboard_counts(user=user)["by_status"]
    items = reverse("annotation:item-list")
    steps = []
    if counts["in_review"]:
        steps.append(Step(f"{plural(counts['in_review'], 'QA item')} in review wait for approval or rejection.",
                          url=f"{items}?status=in_review", action="Review"))
    if counts["draft"]:
        steps.append(Step(f"{plural(counts['draft'], 'draft QA item')} not reviewed yet.",
                          url=f"{items}?status=draft", action="Review drafts"))
    if not steps:
        steps.append(Step(f"Nothing to review ({plural(counts['approved'], 'approved item')}).", url=items,
                          action="QA items", tone="done"))
    return steps


def _import_steps(user) -> list[Step]:
    if not user_can(user, Capability.IMPORT_IMAGES):
        return []
    latest = ImportBatch.objects.order_by("-created_at", "-id").first()
    if latest is None:
        return [Step("No images imported yet.", url=reverse("annotation:image-import"), action="Import images")]
    url = reverse("annotation:import-batch", args=[latest.pk])
    if latest.files_failed:
        return [Step(f"The latest import ({when(latest.created_at)}) has {plural(latest.files_failed, 'failed file')}.",
                     url=url, action="See why", tone="warn")]
    return [Step(f"Latest import {when(latest.created_at)}: {plural(latest.images_created, 'image')} added.",
                 url=url, action="Import", tone="info")]


def _annotation_steps() -> list[Step]:
    stuck = AnnotationBatch.objects.filter(status__in=(AnnotationBatch.Status.FAILED, AnnotationBatch.Status.RETRYING))
    drafts = AnnotationBatch.objects.filter(status=AnnotationBatch.Status.DRAFT)
    counts = {"stuck": stuck.count(), "drafts": drafts.count()}
    worklist = reverse("labelstudio:worklist")
    steps = []
    if counts["stuck"]:
        steps.append(Step(f"{plural(counts['stuck'], 'annotation batch,annotation batches')} could not be sent to "
                          f"Label Studio.", url=worklist, action="Worklist", tone="warn"))
    if counts["drafts"] and settings.LABEL_STUDIO_URL:
        steps.append(Step(f"{plural(counts['drafts'], 'annotation batch,annotation batches')} not sent to Label "
                          f"Studio yet.", url=worklist, action="Worklist"))
    return steps


def _run_steps() -> list[Step]:
    runs = reverse("workers:run-list")
    running = EvaluationRun.objects.filter(status__in=(EvaluationRun.Status.PENDING, EvaluationRun.Status.RUNNING))
    steps = []
    if n := running.count():
        steps.append(Step(f"{plural(n, 'evaluation run')} in progress.", url=f"{runs}?status=running",
                          action="Runs", tone="info"))
    candidates = EvaluationRun.objects.filter(status=EvaluationRun.Status.COMPLETED, scored_at__isnull=False,
                                              is_reference=False)
    n, latest = candidates.count(), candidates.order_by("-created_at", "-id").first()
    if latest is not None:
        steps.append(Step(f"{plural(n, 'scored run')} not marked as reference: only reference runs open "
                          f"adjudication cases. Latest: “{latest.name}”.",
                          url=reverse("workers:run-detail", args=[latest.pk]), action="Review the run"))
    if not steps:
        steps.append(Step("No run in progress.", url=reverse("workers:run-create"), action="New run", tone="done"))
    return steps


def _case_steps() -> list[Step]:
    unread = (AdjudicationCase.objects.filter(status=AdjudicationCase.Status.OPEN)
              .exclude(pk__in=CaseReading.objects.filter(status=CaseReading.Status.ASSIGNED).values("case_id")))
    n = unread.count()
    if not n:
        return []
    return [Step(f"{plural(n, 'open adjudication case')} not assigned to a reader.",
                 url=reverse("adjudication:queue") + "?status=open", action="Assign", tone="info")]


def _release_steps(user) -> list[Step]:
    pending = release_rows().filter(status__in=(Release.Status.DRAFT, Release.Status.BUILT, Release.Status.FAILED))
    latest = release_rows().filter(status=Release.Status.PUBLISHED).order_by("-published_at", "-id").first()
    manages = user_can(user, Capability.MANAGE_RELEASES)   # admins build and publish; curators follow
    steps = []
    for release in pending.order_by("-created_at")[:3]:
        verb = {"draft": "is a draft", "built": "is built, not published", "failed": "failed to build"}[release.status]
        tone = "warn" if release.status == Release.Status.FAILED else "todo" if manages else "info"
        steps.append(Step(f"Release {release.version} {verb}.",
                          url=reverse("releases:release-detail", args=[release.pk]), action="Open", tone=tone))
    if latest is not None:
        steps.append(Step(f"Latest published release: {latest.version} ({when(latest.published_at)}).",
                          url=reverse("releases:release-detail", args=[latest.pk]), action="Release", tone="info"))
    elif not steps and manages:
        steps.append(Step("No release yet.", url=reverse("releases:release-create"), action="New release"))
    return steps


# --- auditors --------------------------------------------------------------------------------------------------

def _auditor(user) -> list[Step]:
    unsigned = (ReportVersion.objects.filter(status=BuildStatus.READY).exclude(signatures__signer=user)
                .select_related("report").only("pk", "number", "report__title", "created_at")
                .order_by("-created_at", "-id"))
    n, latest = unsigned.count(), unsigned.first()
    steps = []
    if latest is not None:
        steps.append(Step(f"{plural(n, 'report version')} you have not signed. Latest: “{latest.report.title}” "
                          f"version {latest.number}.", url=reverse("reports:version-detail", args=[latest.pk]),
                          action="Read and sign"))
    else:
        steps.append(Step("Every ready report version carries your signature.", url=reverse("reports:report-list"),
                          action="Reports", tone="done"))
    checkpoint = AuditCheckpoint.objects.order_by("-seq", "-id").only("seq", "created_at", "reason").first()
    if checkpoint is not None:
        steps.append(Step(f"Latest signed audit checkpoint: event {checkpoint.seq} ({checkpoint.reason}, "
                          f"{when(checkpoint.created_at)}). Verify the trail up to now.",
                          url=reverse("audit:verify"), action="Verify", tone="info"))
    else:
        steps.append(Step("No signed audit checkpoint yet; the trail can still be verified.",
                          url=reverse("audit:verify"), action="Verify", tone="info"))
    return steps


# --- admins ----------------------------------------------------------------------------------------------------

def _admin(user) -> list[Step]:
    users = get_user_model().objects.filter(is_active=True)
    counts = users.aggregate(total=Count("id"), no_role=Count("id", filter=Q(groups__isnull=True,
                                                                              is_superuser=False)))
    per_role = dict(users.filter(groups__name__in=[r.value for r in Role]).values("groups__name").order_by()
                    .annotate(n=Count("id")).values_list("groups__name", "n"))
    people = reverse("admin:auth_user_changelist")
    summary = ", ".join(plural(per_role.get(r.value, 0), r.value) for r in Role)
    steps = [Step(f"{plural(counts['total'], 'active user')}: {summary}.", url=people, action="Users and roles",
                  tone="info")]
    if counts["no_role"]:
        steps.append(Step(f"{plural(counts['no_role'], 'user')} without a role see nothing: give each a role.",
                          url=f"{people}?groups__isnull=True", action="Assign roles", tone="warn"))
    built = release_rows().filter(status=Release.Status.BUILT).order_by("-created_at").first()
    if built is not None:
        steps.append(Step(f"Release {built.version} is built and waits to be published.",
                          url=reverse("releases:release-detail", args=[built.pk]), action="Publish"))
    return steps
