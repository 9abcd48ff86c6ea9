import json

from django import template
from django.utils.html import conditional_escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from audit.diff import MISSING, changed_paths, field_diff
from audit.links import object_link as _object_link
from common.formatting import redact_paths

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


# --- one value of the field-level diff, readable and still exact ------------------------------------------

def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _leaf(value) -> SafeString:
    """A scalar exactly as hashed: numbers, true/false/null as their JSON (`1` and `1.0` differ); a string
    as itself, quoted (JSON) only where bare text would read as another value ("", "1", "true", " x")."""
    if isinstance(value, str):
        bare = value and value == value.strip() and not value.startswith('"')
        if bare:
            try:
                json.loads(value)
            except ValueError:
                return conditional_escape(redact_paths(value))
        return format_html('<span class="jv-quoted">{}</span>', redact_paths(_json(value)))
    return format_html('<span class="jv-literal">{}</span>', _json(value))


def _render(value) -> SafeString:
    if _is_scalar(value):
        return _leaf(value)
    if isinstance(value, dict):
        if not value:
            return _leaf_literal("{}")
        return format_html('<ul class="jv-dict">{}</ul>', format_html_join(
            "", '<li><span class="jv-key">{}</span>: {}</li>',
            ((redact_paths(str(k)), _render(v)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))))
    items = list(value) if isinstance(value, (list, tuple)) else None
    if items is None:
        return _leaf(str(value))
    if not items:
        return _leaf_literal("[]")
    if all(v is None or isinstance(v, (bool, int, float)) for v in items):
        return _leaf_literal(_json(items), "jv-numbers")            # [1, 2, 3]: one line, as hashed
    if all(isinstance(v, dict) and v for v in items):                               # rows of one table
        keys: list[str] = []
        for v in items:
            keys += [k for k in sorted(v, key=str) if k not in keys]
        head = format_html_join("", "<th>{}</th>", ((redact_paths(str(k)),) for k in keys))
        body = format_html_join("", "<tr>{}</tr>", ((format_html_join(
            "", "<td>{}</td>", ((_render(v[k]) if k in v else "",) for k in keys)),) for v in items))
        return format_html('<table class="jv-table"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>', head, body)
    lines = format_html_join("", "<li>{}</li>", ((_render(v),) for v in items))
    return format_html('<ol class="jv-list">{}</ol>', lines)


def _leaf_literal(text: str, css: str = "jv-literal") -> SafeString:
    return format_html('<span class="{}">{}</span>', css, text)


@register.filter
def audit_value(value) -> SafeString:
    """One before or after value of the audit trail's field diff (audit/diff.py) as HTML a person reads:
    a dict as "key: value" lines, a list of dicts as a small table (one column per key), other lists as
    numbered lines (a list of numbers on one line, as its JSON), every scalar exact (JSON numbers, every
    digit; strings quoted where bare text would be ambiguous) and server paths cut. The hashed record and
    the exports keep the JSON itself."""
    if value is MISSING:
        return mark_safe("")
    return _render(value)
