"""The platform's formatting filters for templates (`{% load medr2_format %}`): every one is a thin wrapper
over `common.formatting` (pure) or `common.titles` (the registry of names), so views, exports and templates
write a value the same way. See docs/architecture.md, "Formatting on pages".

    {{ stat.value|pct }}                 54.8%
    {{ stat|ci }}                        [50.1, 60.2]%        (a stat dict with lo / hi)
    {{ diff.value|pp }}                  +9.1 pp
    {{ diff|ci:"pp" }}                   [-3.2, +5.0] pp
    {{ value|num }} {{ iou|num:2 }}      0.523 · 0.52
    {{ p|pvalue }}                       p = 0.032
    {{ "chi2_cc"|test_name }}            McNemar's χ² test with continuity correction
    {{ n|plural:"event" }}               1 event · 2 events
    {{ moment|when }} {{ moment|when:"seconds" }}   2 Dec 2026, 14:05 · 2 Dec 2026, 14:05:09
    {{ key|humanize_key }}               Weak grounding
    {{ value|humanize }}                 yes · cyst, nodule · —
    {{ item.gold_answer|answer }}        cyst in the liver · box (12, 30)–(40, 60)
    {{ params|file_name }}               qwen2-vl
    {{ error|redact_paths }}             "…weights.bin not found"
    {{ code|title_of:"rule" }}           Right answer, wrong evidence
    {{ code|describe:"rule" }}           its one-line description
    {{ filters|filters_text:"all" }}     status: approved; category: Margin
    {{ endpoint.pk|model_colour }}       #0072B2 (common/palette.py: the same colour on every page and plot)
    {% kv_table mapping %}               a two-column table (templates/_kv_table.html)
"""
from __future__ import annotations

from django import template

from common import formatting, palette, titles

register = template.Library()


@register.filter
def pct(value, digits=1):
    return formatting.pct(value, int(digits))


@register.filter
def pp(value, digits=1):
    return formatting.pp(value, int(digits))


@register.filter
def ci(stat, kind="pct"):
    """The interval of a stat dict ({"lo", "hi"}) or of a (lo, hi) pair."""
    if isinstance(stat, dict):
        return formatting.interval(stat.get("lo"), stat.get("hi"), kind)
    if isinstance(stat, (list, tuple)) and len(stat) == 2:
        return formatting.interval(stat[0], stat[1], kind)
    return formatting.MISSING


@register.filter
def num(value, digits=None):
    return formatting.num(value, None if digits in (None, "") else int(digits))


@register.filter
def pvalue(value):
    return formatting.pvalue(value)


@register.filter
def test_name(code):
    return formatting.name_of_test(code)


@register.filter
def plural(count, word):
    return formatting.plural(count, word)


@register.filter
def when(value, arg=""):
    return formatting.when(value, seconds=arg == "seconds")


@register.filter
def humanize_key(key):
    return formatting.humanize_key(key)


@register.filter
def humanize(value, key=""):
    return formatting.humanize_value(value, key)


@register.filter
def answer(value):
    return formatting.answer_text(value)


@register.filter
def file_name(value, default="local weights"):
    return formatting.file_name(value, default)


@register.filter
def redact_paths(value):
    return formatting.redact_paths(value)


@register.filter
def title_of(code, kind):
    return titles.title_of(kind, code)


@register.filter
def filters_text(filters, empty=""):
    """{{ run.item_filters|filters_text:"approved items" }} → "status: approved; category: Margin"."""
    return titles.filters_text(filters, empty)


@register.filter
def describe(code, kind):
    return titles.description_of(kind, code)


@register.filter
def model_colour(endpoint_id):
    """The colour of a model on every page and plot, from its endpoint id; "" or None → the neutral grey."""
    try:
        return palette.model_colour(int(endpoint_id))
    except (TypeError, ValueError):
        return palette.NEUTRAL


@register.filter
def kv_rows(mapping):
    return formatting.kv_rows(mapping)


@register.inclusion_tag("_kv_table.html")
def kv_table(mapping, css_class="", empty="—"):
    """A dict as a small two-column table: humanised keys, readable values, nested dicts flattened.
    `mapping` may also be a list of (label, text) rows already made."""
    if isinstance(mapping, (list, tuple)):
        rows = [(str(k), v if isinstance(v, str) else formatting.humanize_value(v)) for k, v in mapping]
    else:
        rows = formatting.kv_rows(mapping)
    return {"rows": rows, "css_class": css_class, "empty": empty}
