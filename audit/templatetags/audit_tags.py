import json

from django import template

register = template.Library()


@register.filter
def as_json(value) -> str:
    """Show before/after as the JSON that was hashed (not Python's repr)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
