import json

from django import template

from audit.diff import changed_paths, field_diff
from audit.links import object_link as _object_link

register = template.Library()


@register.filter
def as_json(value) -> str:
    """Show before/after as the JSON that was hashed (not Python's repr)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@register.simple_tag
def event_diff(event) -> dict:
    """The field-level before → after rows of an event, and the paths that changed."""
    rows = field_diff(event.before, event.after)
    return {"rows": rows, "changed": changed_paths(rows)}


@register.simple_tag
def object_link(object_type: str, object_id) -> str | None:
    """The URL of the object's page, when its app registered one (audit/links.py), else None."""
    return _object_link(object_type, object_id)
