"""Template filters of the report: every number goes through `reports.formatting`, the one formatter the
JSON-versus-PDF test also uses."""
from __future__ import annotations

import json

from django import template
from django.utils.html import format_html

from ..formatting import fmt, fmt_count, fmt_interval, fmt_stat, fmt_time, stat_parts

register = template.Library()


@register.filter
def number(value, kind="pct"):
    """{{ value|number:"pct" }}"""
    return fmt(value, kind)


@register.filter
def stat(value, kind="pct"):
    """{{ stat|stat:"pct" }}: a table cell, the value over its interval and counts."""
    number_text, detail = stat_parts(value if isinstance(value, dict) else None, kind)
    if not detail:
        return number_text
    return format_html('<span class="v">{}</span><span class="ci">{}</span>', number_text, detail)


@register.filter
def stat_line(value, kind="pct"):
    """{{ stat|stat_line:"pct" }}: value (interval; k/n) on one line."""
    return fmt_stat(value if isinstance(value, dict) else None, kind)


@register.filter
def value_of(value, kind="pct"):
    """{{ stat|value_of:"pct" }}: the stat's value alone."""
    return fmt((value or {}).get("value") if isinstance(value, dict) else None, kind)


@register.filter
def interval(value, kind="pct"):
    return fmt_interval(value, kind)


@register.filter
def when(value):
    """{{ iso|when }}: a stored time to the second, UTC."""
    return fmt_time(value)


@register.filter
def count(value):
    return fmt_count(value)


@register.filter
def get(mapping, key):
    """{{ mapping|get:key }}: a dict entry or list item by a variable key (figure keys, model positions)."""
    if isinstance(mapping, dict):
        return mapping.get(key, mapping.get(str(key)))
    if isinstance(mapping, (list, tuple)) and isinstance(key, int) and -len(mapping) <= key < len(mapping):
        return mapping[key]
    return None


@register.filter
def as_json(value):
    """Parameters and filters as sorted JSON (escaped by the template like any text)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
