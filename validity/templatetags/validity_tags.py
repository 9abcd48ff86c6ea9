from django import template

register = template.Library()


@register.filter
def pct(value, digits: int = 1):
    if value is None or value == "":
        return "—"
    return f"{float(value) * 100:.{int(digits)}f}%"


@register.filter
def points(value):
    """A difference of proportions in percentage points, signed."""
    if value is None or value == "":
        return "—"
    return f"{float(value) * 100:+.1f}"


@register.filter
def ci(value):
    if not value:
        return "no interval"
    lo, hi = value
    return f"{lo * 100:.1f}–{hi * 100:.1f}"


@register.filter
def get(mapping, key):
    return (mapping or {}).get(key)


@register.filter
def pval(value):
    if value is None or value == "":
        return "—"
    return f"{float(value):.2g}"
