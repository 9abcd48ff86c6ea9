"""The five roles and what each may do.

A role is a Django group of the same name. Capabilities are checked in one place
(`user_can`) so views, APIs and templates agree; the permission-matrix test walks
every route against every role.
"""
from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    ANNOTATOR = "annotator"        # draws boxes / answers in Label Studio; sees images assigned to them
    ADJUDICATOR = "adjudicator"    # radiologist deciding disagreements; sees images assigned to them
    CURATOR = "curator"            # imports images, authors chains, builds releases; sees everything
    AUDITOR = "auditor"            # governance board: reads, the audit trail; writes only model reports and signs them
    ADMIN = "admin"                # everything, including user management and Django admin


class Capability(StrEnum):
    VIEW_DASHBOARD = "view_dashboard"
    VIEW_IMAGES = "view_images"            # scoped by image_visible_to() for annotators/adjudicators
    VIEW_ALL_IMAGES = "view_all_images"
    IMPORT_IMAGES = "import_images"
    ASSIGN_IMAGES = "assign_images"
    VIEW_ITEMS = "view_items"              # chains, QA items, variants (their gold answers); scoped like images
    VIEW_GOLD = "view_gold"                # an image's findings, gold boxes and lesion counts (annotators read blind)
    EDIT_ITEMS = "edit_items"              # edit (new version), approve / reject, generate
    EDIT_TAXONOMY = "edit_taxonomy"        # task category definitions
    VIEW_AUDIT = "view_audit"
    MANAGE_USERS = "manage_users"
    VIEW_RESULTS = "view_results"          # evaluation runs, leaderboards, predictions (not shown to readers: blinding)
    RUN_EVALUATIONS = "run_evaluations"    # create, cancel, resume, rescore runs
    MANAGE_MODELS = "manage_models"        # register and edit model endpoints
    MANAGE_REFERENCE_RUNS = "manage_reference_runs"  # mark a scored run as reference: only those feed adjudication
    VIEW_WORKLIST = "view_worklist"        # Label Studio batches and tasks (readers see only batches they read)
    MANAGE_ANNOTATION = "manage_annotation"  # create / push / sync Label Studio batches, see the sync log
    VIEW_QUEUE = "view_queue"              # the adjudication queue (cases where models, gold and annotators disagree)
    ADJUDICATE = "adjudicate"              # read a case and give a verdict (never on an item one annotated)
    ASSIGN_CASES = "assign_cases"          # assign cases to adjudicators (manual, round-robin, double reading)
    VIEW_VALIDITY = "view_validity"        # shortcut audits: results, plots, per-item image-necessary verdicts
    RUN_SHORTCUT_AUDIT = "run_shortcut_audit"  # start a shortcut audit (page, API, command)
    VIEW_RELEASES = "view_releases"        # benchmark releases: list, page, changelog, download
    MANAGE_RELEASES = "manage_releases"    # create, build and publish releases (admins)
    VIEW_REPORTS = "view_reports"          # model reports: list, page, versions, downloads, signatures
    MANAGE_REPORTS = "manage_reports"      # create reports, set acceptance criteria, generate versions (the board)
    SIGN_REPORTS = "sign_reports"          # sign a report version, password re-entered (the board)


ROLE_CAPABILITIES: dict[Role, frozenset[Capability]] = {
    # blinding: an annotator never sees the gold answers, gold boxes or model outputs of what they may be
    # asked to annotate, so no QA items (they carry the gold) and no findings on their images
    Role.ANNOTATOR: frozenset({Capability.VIEW_DASHBOARD, Capability.VIEW_IMAGES, Capability.VIEW_WORKLIST}),
    Role.ADJUDICATOR: frozenset({Capability.VIEW_DASHBOARD, Capability.VIEW_IMAGES, Capability.VIEW_ITEMS,
                                 Capability.VIEW_GOLD, Capability.VIEW_WORKLIST, Capability.VIEW_QUEUE,
                                 Capability.ADJUDICATE}),
    Role.CURATOR: frozenset(
        {
            Capability.VIEW_DASHBOARD,
            Capability.VIEW_IMAGES,
            Capability.VIEW_ALL_IMAGES,
            Capability.IMPORT_IMAGES,
            Capability.ASSIGN_IMAGES,
            Capability.VIEW_ITEMS,
            Capability.VIEW_GOLD,
            Capability.EDIT_ITEMS,
            Capability.EDIT_TAXONOMY,
            Capability.VIEW_RESULTS,
            Capability.RUN_EVALUATIONS,
            Capability.MANAGE_MODELS,
            Capability.MANAGE_REFERENCE_RUNS,
            Capability.VIEW_WORKLIST,
            Capability.MANAGE_ANNOTATION,
            Capability.VIEW_QUEUE,
            Capability.ASSIGN_CASES,
            Capability.VIEW_VALIDITY,
            Capability.RUN_SHORTCUT_AUDIT,
            Capability.VIEW_RELEASES,
            Capability.VIEW_REPORTS,       # reads reports; sets no criteria for the models it evaluates
        }
    ),
    Role.AUDITOR: frozenset(
        {Capability.VIEW_DASHBOARD, Capability.VIEW_IMAGES, Capability.VIEW_ALL_IMAGES, Capability.VIEW_ITEMS,
         Capability.VIEW_GOLD, Capability.VIEW_AUDIT, Capability.VIEW_RESULTS, Capability.VIEW_WORKLIST,
         Capability.VIEW_QUEUE, Capability.VIEW_VALIDITY, Capability.VIEW_RELEASES, Capability.VIEW_REPORTS,
         Capability.MANAGE_REPORTS, Capability.SIGN_REPORTS}
    ),
    Role.ADMIN: frozenset(Capability),
}


def user_roles(user) -> frozenset[Role]:
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return frozenset()
    cached = getattr(user, "_medr2_roles", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True))
        cached = frozenset(r for r in Role if r.value in names)
        if user.is_superuser:
            cached = cached | {Role.ADMIN}
        user._medr2_roles = cached
    return cached


def roles_with(capability: Capability) -> list[Role]:
    """The roles that have `capability`, in the order of `Role` (for the 403 page: "needs the curator role")."""
    return [r for r in Role if capability in ROLE_CAPABILITIES[r]]


def user_can(user, capability: Capability) -> bool:
    return any(capability in ROLE_CAPABILITIES[r] for r in user_roles(user))
