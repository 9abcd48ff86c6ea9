"""Curators give readers their images: annotators and adjudicators see only the images assigned to them
(`annotation.selectors.image_visible_to`); curators, auditors and admins see every image. The page
(`/images/assign/`), the API (`POST /api/images/assignments/`) and `image_assign`'s other callers (the demo,
Label Studio batches) all end in `image_assign` / `image_unassign`, which write the audit trail."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from accounts.roles import Role, user_roles
from annotation.models import Image
from annotation.services.images import image_assign, image_unassign

#: the most images one change may name (a filter that matches more is narrowed first)
MAX_IMAGES_PER_CHANGE = 100_000
READER_ROLES = frozenset({Role.ANNOTATOR, Role.ADJUDICATOR})


def images_assignment_change(*, reader, images: QuerySet[Image], assign: bool, actor) -> int:
    """Assign (or, with `assign=False`, unassign) `images` to `reader`; returns how many images changed
    hands (unassign) or were named (assign). Refuses a user who is not an active reader and a change
    that names no image or more than `MAX_IMAGES_PER_CHANGE`."""
    if not reader.is_active or not (user_roles(reader) & READER_ROLES):
        raise ValidationError({"user": [f"{reader.get_username()} is not an active annotator or adjudicator: only "
                                        "readers are assigned images (the other roles see every image)"]})
    ids = list(images.values_list("pk", flat=True)[:MAX_IMAGES_PER_CHANGE + 1])
    if not ids:
        raise ValidationError("no image matches: name image ids, or choose at least one filter")
    if len(ids) > MAX_IMAGES_PER_CHANGE:
        raise ValidationError(f"more than {MAX_IMAGES_PER_CHANGE:,} images match: narrow the filters")
    chosen = [Image(pk=pk) for pk in ids]
    if assign:
        return image_assign(images=chosen, user=reader, actor=actor)
    return image_unassign(images=chosen, user=reader, actor=actor)
