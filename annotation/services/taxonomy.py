"""Task category definitions are data; curators change them here (validated, audited)."""
from __future__ import annotations

from django.core.cache import cache
from django.db import transaction

from annotation.chains import parse_category
from annotation.models import TaskCategory
from annotation.selectors import CATEGORY_TITLES_KEY
from annotation.services.chains import category_payload
from audit.services import audit_record


def _forget_titles() -> None:
    """Pages name categories from a cached map (annotation.selectors.category_titles): drop it."""
    transaction.on_commit(lambda: cache.delete(CATEGORY_TITLES_KEY))


EDITABLE = ("name", "prompt_template", "alt_templates", "rule", "is_active", "description")


def category_update(*, category: TaskCategory, actor, **changes) -> TaskCategory:
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise ValueError(f"cannot edit {sorted(unknown)}")
    with transaction.atomic():
        row = TaskCategory.objects.select_for_update().select_related("stage").get(pk=category.pk)
        before = {f: getattr(row, f) for f in changes}
        for name, value in changes.items():
            setattr(row, name, value)
        parse_category(category_payload(row))  # refuse an invalid definition before it is stored
        row.save(update_fields=list(changes))
        audit_record(actor=actor, action="annotation.category.update", target=row, before=before,
                     after={f: getattr(row, f) for f in changes})
        _forget_titles()
    return row


def category_create(*, actor, code: str, stage, answer_type: str, **fields) -> TaskCategory:
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise ValueError(f"cannot set {sorted(unknown)}")
    with transaction.atomic():
        last = TaskCategory.objects.filter(stage=stage).order_by("-order").values_list("order", flat=True).first()
        row = TaskCategory(code=code, stage=stage, answer_type=answer_type, order=(last or 0) + 1, **fields)
        parse_category(category_payload(row))
        row.save()
        audit_record(actor=actor, action="annotation.category.create", target=row,
                     after={"code": code, "stage": stage.code, "answer_type": answer_type,
                            **{f: getattr(row, f) for f in fields}})
        _forget_titles()
    return row
