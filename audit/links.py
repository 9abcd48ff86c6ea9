"""Links from an audit event to the page of its object, registered by the app that owns the page.

The audit trail sits below every domain app, so it cannot know their URLs. Each app registers its
object types in its `AppConfig.ready()` (that app pointing down to audit):

    from audit.links import register_object_link
    register_object_link("annotation.qaitem", "annotation:item-detail")        # reversed with pk=object_id
    register_object_link("workers.runbatch", lambda object_id: ...)            # or a callable -> url or None

A URL name is reversed with `kwargs={"pk": int(object_id)}`. Types nobody registered, ids that are
not numbers (for a URL name), and callables that return None render as plain text.
"""
from __future__ import annotations

from collections.abc import Callable

from django.urls import NoReverseMatch, reverse

Target = str | Callable[[str], str | None]

_LINKS: dict[str, Target] = {}


def register_object_link(object_type: str, target: Target) -> None:
    """Link events about `object_type` (e.g. "annotation.qaitem") to a page. Registering a type twice
    with a different target is an error (two apps claiming one type)."""
    if not object_type or "." not in object_type:
        raise ValueError(f"object types are dotted names (app_label.model), got {object_type!r}")
    if not (isinstance(target, str) or callable(target)):
        raise TypeError("the link target is a URL name or a callable(object_id) -> url")
    current = _LINKS.get(object_type)
    if current is not None and current != target:
        raise ValueError(f"{object_type!r} already links to {current!r}")
    _LINKS[object_type] = target


def unregister_object_link(object_type: str) -> None:
    """For tests."""
    _LINKS.pop(object_type, None)


def registered_object_types() -> list[str]:
    return sorted(_LINKS)


def object_link(object_type: str, object_id: str | int) -> str | None:
    """The URL of the object's page, or None (unknown type, no id, or no such page)."""
    target = _LINKS.get(object_type or "")
    object_id = str(object_id if object_id is not None else "")
    if target is None or not object_id:
        return None
    if callable(target):
        return target(object_id) or None
    if not object_id.isdigit():
        return None
    try:
        return reverse(target, kwargs={"pk": int(object_id)})
    except NoReverseMatch:
        return None
