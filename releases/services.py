"""Writes for releases: create a draft (freeze the item versions, the changelog and the version),
build it (the files, on a worker), publish it (permanent). Every step is audited.

Refused with a clear message, nothing written: no items; a version that is not semver, not greater
than the latest release, or a smaller step than the semver rule asks for; a missing signing key; an
image file missing from storage (the build fails and says which); publishing an unbuilt release;
changing a published one."""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation.models import Variant
from audit.services import audit_checkpoint, audit_record
from common.dispatch import send_after_commit
from common.errors import Conflict

from . import semver
from .contents import release_snapshot
from .models import Release, ReleaseItem
from .package.build import build_release
from .package.files import ReleaseError, load_signing_key, remove_tree
from .selectors import (
    INCLUDABLE,
    audit_head,
    reference_standard,
    release_candidates,
    release_changes,
    release_counts,
    release_latest,
    shortcut_summary,
    taxonomy,
    today,
)


def release_root() -> Path:
    return Path(settings.MEDR2_RELEASE_ROOT)


def signing_key() -> bytes:
    """The Ed25519 private key from the environment (MEDR2_RELEASE_SIGNING_KEY, else the platform key
    MEDR2_SIGNING_KEY); never stored."""
    text = settings.MEDR2_RELEASE_SIGNING_KEY or settings.MEDR2_SIGNING_KEY
    if not text:
        raise ValidationError("no release signing key: set MEDR2_SIGNING_KEY or MEDR2_RELEASE_SIGNING_KEY (an "
                              "Ed25519 private key, "
                              "hex or PEM; `manage.py release_create --generate-key` prints a new one)")
    try:
        return load_signing_key(text)
    except ReleaseError as exc:
        raise ValidationError(f"MEDR2_RELEASE_SIGNING_KEY: {exc}") from exc


def _variant_ids(item_ids: list[int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for item_id, pk in Variant.objects.filter(item_id__in=item_ids).order_by("item_id", "pk").values_list(
            "item_id", "pk").iterator(5000):
        out.setdefault(item_id, []).append(pk)
    return out


@transaction.atomic
def release_create(*, actor, version: str = "", filters: dict | None = None, include: tuple[str, ...] = (),
                   name: str = "med-r2", title: str = "", description: str = "", license: str = "",
                   previous: Release | None = None) -> Release:
    """A draft release of the current approved items matching `filters` (stage, category, modality,
    source_dataset). `include` names reasons to include anyway: rejected, ambiguous, open_case.
    Without `version`, the semver rule picks the next one."""
    unknown = set(include) - set(INCLUDABLE)
    if unknown:
        raise ValidationError(f"cannot include {', '.join(sorted(unknown))}: choose from {', '.join(INCLUDABLE)}")
    filters = {k: v for k, v in (filters or {}).items() if v not in (None, "", [], ())}
    rows, excluded = release_candidates(filters=filters, include=set(include))
    if not rows:
        raise ValidationError("a release needs at least one item: no current approved item matches "
                              f"{filters or 'the selection'} (left out: {excluded['left_out'] or 'none'})")
    latest = release_latest()
    previous = previous or latest
    changes, counts = release_changes(rows=rows, previous=previous)
    bump = "major" if counts["first"] else semver.bump_for(
        removed=counts["removed"], gold_changed=counts["gold_changed"], added=counts["added"],
        changed=counts["changed"])
    latest_v = semver.parse(latest.version) if latest else None
    previous_v = semver.parse(previous.version) if previous else None
    if version:
        try:
            chosen = semver.parse(version)
        except ValueError as exc:
            raise ValidationError(str(exc)) from exc
    else:
        chosen = semver.next_version(previous_v, bump)
        if latest_v and chosen <= latest_v:
            chosen = semver.next_version(latest_v, bump)
    refusal = semver.check(chosen, latest=latest_v, previous=previous_v, bump=bump)
    if refusal:
        raise ValidationError(refusal)
    tax, tax_version = taxonomy()
    release = Release.objects.create(
        name=name, version=str(chosen), title=title or Release._meta.get_field("title").default,
        description=description, license=license or Release._meta.get_field("license").default, previous=previous,
        selection={"filters": filters, "include": sorted(include)}, excluded=excluded, changes=changes,
        bump=bump, taxonomy=tax, taxonomy_version=tax_version, audit_head=audit_head(),
        reference_standard=reference_standard(item_ids=[r["item_id"] for r in rows]),
        shortcut_audit=shortcut_summary(), created_date=today(),
        created_by=actor if getattr(actor, "is_authenticated", False) else None)
    variants = _variant_ids([r["item_id"] for r in rows])
    ReleaseItem.objects.bulk_create([
        ReleaseItem(release=release, item_id=r["item_id"], item_key=r["item_key"], item_version=r["version"],
                    gold_hash=r["gold_hash"], split=r["split"], included_anyway=r["included_anyway"],
                    variant_ids=variants.get(r["item_id"], [])) for r in rows], batch_size=2000)
    release.counts = release_counts(release=release)
    release.save(update_fields=["counts"])
    # the release page shows `changes` and `previous` from this record (selectors.release_change_summary)
    audit_record(actor=actor, action="releases.release.create", target=release,
                 after={"version": release.version, "bump": bump, "items": len(rows), "filters": filters,
                        "include": sorted(include), "excluded": excluded, "previous": getattr(previous, "version",
                                                                                                None),
                        "changes": {k: counts[k] for k in ("added", "removed", "changed", "gold_changed")},
                        "audit_head": release.audit_head})
    return release


def _archive_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def release_build(*, release_id: int, actor=None, progress: Callable[[str, int, int], None] | None = None) -> Release:
    """Write the release's folder and archive (idempotent: a finished build is returned as it is; a
    build killed halfway left nothing visible and runs again from the start, byte-identical)."""
    release = Release.objects.get(pk=release_id)
    if release.status in (Release.Status.BUILT, Release.Status.PUBLISHED):
        return release
    key = signing_key()
    Release.objects.filter(pk=release.pk).update(status=Release.Status.BUILDING, error="",
                                                 progress={"step": "starting", "done": 0, "total": 0})

    def report(step: str, done: int, total: int) -> None:
        Release.objects.filter(pk=release.pk).update(progress={"step": step, "done": done, "total": total})
        if progress:
            progress(step, done, total)

    folder = release_root() / f"{release.name}-{release.version}"
    try:
        # the rows are spooled to disk beside the release (bounded memory) under a fixed name, so the rerun of a
        # build killed halfway wipes the spool it left, as build_release wipes its half-written folder
        spool = release_root() / f".rows-{release.name}-{release.version}"
        remove_tree(spool)
        spool.mkdir(parents=True)
        try:
            report("snapshot", 0, 1)
            snapshot = release_snapshot(release=release, spool=spool / "rows.pickle")
            report("snapshot", 1, 1)
            # a folder left there belongs to this draft (never published: published releases are not rebuilt)
            result = build_release(snapshot, folder, signing_key=key, progress=report, replace=True)
        finally:
            remove_tree(spool)
    except Exception as exc:
        # whatever stopped it, the release says so (never left "building"); nothing half-built is visible
        reason = str(exc) if isinstance(exc, ReleaseError) else f"{type(exc).__name__}: {exc}"
        with transaction.atomic():
            Release.objects.filter(pk=release.pk).update(status=Release.Status.FAILED, error=reason)
            audit_record(actor=actor, action="releases.release.build_failed", target=release,
                         after={"version": release.version, "error": reason})
        if isinstance(exc, ReleaseError):
            raise ValidationError(reason) from exc
        raise
    with transaction.atomic():
        release = Release.objects.select_for_update().get(pk=release.pk)
        release.status = Release.Status.BUILT
        release.digest = result.digest
        release.public_key = result.public_key
        release.folder = str(result.folder.relative_to(release_root()))
        release.archive_sha256 = _archive_sha256(result.archive)
        release.archive_bytes = result.archive.stat().st_size
        release.built_at = timezone.now()
        release.progress = {"step": "done", "done": result.files, "total": result.files}
        release.save()
        audit_record(actor=actor, action="releases.release.build", target=release,
                     after={"version": release.version, "digest": release.digest,
                            "archive_sha256": release.archive_sha256, "files": result.files,
                            "public_key": release.public_key})
    return release


def release_build_later(*, release: Release, actor) -> None:
    """Queue the build on a worker (after commit); the release page shows its progress."""
    from .tasks import release_build_task  # lazy: tasks.py imports this module (a real cycle)

    signing_key()   # refuse at once, not on the worker, when there is no key
    if release.status == Release.Status.PUBLISHED:
        raise Conflict(f"release {release.version} is published: it never changes; make a new release")
    if release.status == Release.Status.BUILT:
        raise Conflict(f"release {release.version} is built already (digest {release.digest[:12]}…); publish it, "
                       "or make a new release")
    with transaction.atomic():
        Release.objects.filter(pk=release.pk).update(status=Release.Status.BUILDING, error="",
                                                     progress={"step": "queued", "done": 0, "total": 0})
        audit_record(actor=actor, action="releases.release.build_queued", target=release,
                     after={"version": release.version})
        send_after_commit(release_build_task, release.pk, getattr(actor, "pk", None))


@transaction.atomic
def release_publish(*, release: Release, actor) -> Release:
    release = Release.objects.select_for_update().get(pk=release.pk)
    if release.status == Release.Status.PUBLISHED:
        raise Conflict(f"release {release.version} is already published")
    if release.status != Release.Status.BUILT:
        raise ValidationError(f"release {release.version} is {release.get_status_display()}: build it before "
                              "publishing")
    release.status = Release.Status.PUBLISHED
    release.published_at = timezone.now()
    release.published_by = actor if getattr(actor, "is_authenticated", False) else None
    release.save(update_fields=["status", "published_at", "published_by"])
    audit_record(actor=actor, action="releases.release.publish", target=release,
                 after={"version": release.version, "digest": release.digest,
                        "archive_sha256": release.archive_sha256})
    # the chain's head, signed with the platform key, in the same transaction: a later truncation of the
    # trail's tail past this release is caught by verify_audit (refused, nothing published, without the key)
    audit_checkpoint(reason=f"release {release.name} {release.version} published (digest {release.digest[:16]})",
                     actor=actor)
    return release
