"""A field-level diff of an event's `before` and `after` (pure: JSON values in, rows out).

Nested objects are walked to their leaves and named by dotted paths (`status.3`); lists and scalars
are compared whole, by their JSON text (so `1`, `1.0` and `true` differ, as they do in the hashed
record). A create event (no `before`) lists every field as added, a delete event (no `after`) as
removed. Values are never shortened: the page shows them in full.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ADDED, REMOVED, CHANGED, UNCHANGED = "added", "removed", "changed", "unchanged"


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


@dataclass(frozen=True)
class FieldChange:
    path: str           # dotted path of the field; "" when before/after are not objects
    old: Any            # MISSING when the field is new
    new: Any            # MISSING when the field was removed
    status: str         # added / removed / changed / unchanged

    @property
    def changed(self) -> bool:
        return self.status != UNCHANGED

    @property
    def old_json(self) -> str:
        return "" if self.old is MISSING else _json(self.old)

    @property
    def new_json(self) -> str:
        return "" if self.new is MISSING else _json(self.new)


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _status(old: Any, new: Any) -> str:
    if old is MISSING:
        return ADDED
    if new is MISSING:
        return REMOVED
    return UNCHANGED if _json(old) == _json(new) else CHANGED


def _walk(path: str, old: Any, new: Any, out: list[FieldChange]) -> None:
    old_is_dict, new_is_dict = isinstance(old, dict), isinstance(new, dict)
    # walk into objects when both sides are objects, or one is and the other is absent
    if (old_is_dict or new_is_dict) and (old_is_dict or old is MISSING) and (new_is_dict or new is MISSING):
        o, n = (old if old_is_dict else {}), (new if new_is_dict else {})
        keys = set(o) | set(n)
        if keys:
            for key in sorted(keys, key=str):
                _walk(_join(path, key), o.get(key, MISSING), n.get(key, MISSING), out)
            return
    if old is MISSING and new is MISSING:
        return
    out.append(FieldChange(path, old, new, _status(old, new)))


def field_diff(before: Any, after: Any) -> list[FieldChange]:
    """One row per field of `before` and `after` (None means absent), sorted by path."""
    rows: list[FieldChange] = []
    _walk("", MISSING if before is None else before, MISSING if after is None else after, rows)
    return rows


def changed_paths(rows: list[FieldChange]) -> list[str]:
    return [r.path or "(value)" for r in rows if r.changed]
