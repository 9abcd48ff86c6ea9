"""Which objects an event touched, beyond its own `object_type:object_id` (pure: no database).

A bulk event (approve 40 items, assign 12 cases) names every object it touched:
`audit_record(..., objects=[("annotation.qaitem", 3), ...])`. The list is stored twice: in the hashed
canonical payload (key `objects`, a sorted list of `[object_type, object_id]` pairs, present only when
the event has one, so events written before the list existed hash as they always did) and as indexed
rows (`AuditEventObject`) that the per-object history queries. `audit_verify` checks that the rows
equal the hashed list.

Events written before the list existed name their items in `after` only; `legacy_objects` reads those
lists (migration 0005 backfilled rows from it; verification checks those rows against it).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MAX_TYPE_LENGTH = 100
MAX_ID_LENGTH = 64

# action -> (key in `after` holding a list of ids, object type) for events written before `objects`
LEGACY_OBJECT_LISTS: dict[str, tuple[str, str]] = {
    "annotation.qa_item.review": ("item_ids", "annotation.qaitem"),
    "annotation.image.assign": ("image_ids", "annotation.image"),
    "adjudication.cases.assign_round_robin": ("case_ids", "adjudication.case"),
}


def _sort_key(pair: tuple[str, str]) -> tuple:
    object_type, object_id = pair
    numeric = object_id.isdigit()
    return object_type, not numeric, int(object_id) if numeric else 0, object_id


def normalize_objects(objects: Iterable[tuple[str, Any]] | None) -> list[list[str]]:
    """`[(type, id), ...]` as the canonical list: ids as strings, no repeats, sorted by type then id
    (numeric ids in numeric order). Refuses empty or over-long types and ids."""
    seen: set[tuple[str, str]] = set()
    for pair in objects or ():
        try:
            object_type, object_id = pair
        except (TypeError, ValueError):
            raise ValueError(f"an audit object is an (object_type, object_id) pair, got {pair!r}") from None
        object_type, object_id = str(object_type), str(object_id)
        if not object_type or "." not in object_type or len(object_type) > MAX_TYPE_LENGTH:
            raise ValueError(f"audit object type must be a dotted name of at most {MAX_TYPE_LENGTH} characters, "
                             f"got {object_type!r}")
        if not object_id or len(object_id) > MAX_ID_LENGTH:
            raise ValueError(f"audit object id must be 1 to {MAX_ID_LENGTH} characters, got {object_id!r}")
        seen.add((object_type, object_id))
    return [list(pair) for pair in sorted(seen, key=_sort_key)]


def legacy_objects(action: str, after: Any) -> list[list[str]]:
    """The objects an event from before the `objects` list named in its `after` (normalized), or []."""
    key, object_type = LEGACY_OBJECT_LISTS.get(action, ("", ""))
    ids = after.get(key) if key and isinstance(after, dict) else None
    if not isinstance(ids, list):
        return []
    usable = [(object_type, i) for i in ids
              if isinstance(i, int | str) and not isinstance(i, bool) and 0 < len(str(i)) <= MAX_ID_LENGTH]
    return normalize_objects(usable)
