"""The run page's statistic cells (`{% load run_cells %}`): `{{ stat|acc_cell }}`, `{{ diff|diff_cell:"pct" }}`,
`{{ value|pct_cell:"pp" }}`. The results tables print several hundred of them; as filters each costs one
function call where an `{% include %}` of a partial cost a template render. The HTML is what the partials
wrote (`_acc.html`, `_diff.html`, `_pct.html`), their closing newline included; the numbers are formatted by
the platform's filters (`medr2_format`). An entry missing from a stat prints as a failed template lookup did
(""), so every cell reads as before."""
from __future__ import annotations

from django import template
from django.utils.html import conditional_escape as e
from django.utils.safestring import SafeString, mark_safe

from common.templatetags.medr2_format import ci, num, pct, plural, pp

register = template.Library()
DASH = mark_safe('<span class="muted">—</span>\n')
TITLE = "95% cluster-bootstrap interval"


def _at(stat: dict, key: str):
    """What `{{ stat.key }}` handed its filters: the entry, or "" when there is none."""
    return stat[key] if key in stat else ""


def _has_value(stat) -> bool:
    return bool(stat) and isinstance(stat, dict) and stat.get("value") is not None


@register.filter
def acc_cell(c) -> SafeString:
    """A proportion (workers.scoring.stats: value, lo, hi, n, clusters): the value, its 95% interval and n,
    the patients in the title; — without a value."""
    if not _has_value(c):
        return DASH
    interval, n = e(ci(c)), e(num(_at(c, "n")))
    patients = f" from {e(plural(_at(c, 'clusters'), 'patient'))}" if c.get("clusters") else ""
    lo = f'<span class="muted small"> {interval}</span>' if c.get("lo") is not None else ""
    return mark_safe(f'<span title="{TITLE} {interval}, n={n}{patients}">{e(pct(c["value"]))}</span>{lo}'
                     f'<span class="muted small"> n={n}</span>\n')


@register.filter
def diff_cell(d, fmt: str = "") -> SafeString:
    """A difference with its interval: percentage points (default), "pct" (a proportion) or "num" (two
    decimals); n in the title when known; — without a value."""
    if not _has_value(d):
        return DASH
    kind = fmt if fmt in ("num", "pct") else "pp"
    interval = e(ci(d, kind))
    value = num(d["value"], 2) if kind == "num" else pct(d["value"]) if kind == "pct" else pp(d["value"])
    n = f", n={e(num(_at(d, 'n')))}" if d.get("n") else ""
    lo = f'<span class="muted small"> {interval}</span>' if d.get("lo") is not None else ""
    return mark_safe(f'<span title="{TITLE} {interval}{n}">{e(value)}</span>{lo}\n')


@register.filter
def pct_cell(v, fmt: str = "") -> SafeString:
    """A bare number: a proportion (default), "pp" (percentage points) or "num" (two decimals); — for None."""
    if v is None:
        return DASH
    return mark_safe(f"{e(num(v, 2) if fmt == 'num' else pp(v) if fmt == 'pp' else pct(v))}\n")
