"""One way to write a number in a report: the HTML, the PDF (rendered from that HTML) and the tests that
compare the PDF's text with the JSON all call these functions, so a number reads the same everywhere.

Kinds: ``pct`` a proportion as a percentage with one decimal ("78.6%"); ``pp`` a difference of
proportions in signed percentage points ("+9.1 pp", "-3.0 pp"); ``num`` a plain number with three
decimals (IoU, kappa: "0.523"); ``int`` a count ("1,204"); ``p`` a p-value ("0.031", "<0.001").
A missing value is an em dash: never 0, never blank."""
from __future__ import annotations

from datetime import UTC, datetime

from django.utils import dateformat

from common.formatting import DATETIME_SECONDS_FORMAT

MISSING = "—"
KINDS = ("pct", "pp", "num", "int", "p")


def fmt(value, kind: str = "pct") -> str:
    """`value` written as `kind` (see the module docstring)."""
    if kind not in KINDS:
        raise ValueError(f"unknown number kind {kind!r}; one of {', '.join(KINDS)}")
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return MISSING
    if value != value:   # NaN
        return MISSING
    if kind == "pct":
        return f"{100 * value:.1f}%"
    if kind == "pp":
        text = f"{100 * value:+.1f} pp"
        return "+0.0 pp" if text == "-0.0 pp" else text
    if kind == "num":
        text = f"{value:.3f}"
        return "0.000" if text == "-0.000" else text
    if kind == "int":
        return f"{int(value):,}"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def fmt_interval(stat: dict | None, kind: str = "pct") -> str:
    """The 95% interval of a stat or difference ("75.0–83.3%"), or the em dash without one."""
    if not stat or stat.get("lo") is None or stat.get("hi") is None:
        return MISSING
    lo, hi = fmt(stat["lo"], kind), fmt(stat["hi"], kind)
    if kind == "pct":
        return f"{lo[:-1]}–{hi}"
    if kind == "pp":
        return f"{lo[:-3]} to {hi}"
    return f"{lo}–{hi}"


def fmt_count(stat: dict | None) -> str:
    """k/n of a proportion ("11/14"), n alone for a difference ("n=11"), or the em dash."""
    if not stat:
        return MISSING
    if stat.get("k") is not None and stat.get("n") is not None:
        return f"{fmt(stat['k'], 'int')}/{fmt(stat['n'], 'int')}"
    if stat.get("n") is not None:
        return f"n={fmt(stat['n'], 'int')}"
    return MISSING


def stat_parts(stat: dict | None, kind: str = "pct") -> tuple[str, str]:
    """(value, "interval; counts") of a stat: a table cell shows them on two lines."""
    if not stat or stat.get("value") is None:
        return MISSING, ""
    return fmt(stat["value"], kind), f"{fmt_interval(stat, kind)}; {fmt_count(stat)}"


def fmt_stat(stat: dict | None, kind: str = "pct") -> str:
    """One line: value, interval and counts ("78.6% (75.0–83.3%; 11/14)")."""
    value, detail = stat_parts(stat, kind)
    return f"{value} ({detail})" if detail else value



def fmt_time(iso: str | None) -> str:
    """A stored ISO time to the second in the platform's one date format (common.formatting), in UTC when it
    carries an offset ("1 Dec 2026, 18:34:24 UTC")."""
    if not iso:
        return MISSING
    try:
        moment = datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return str(iso)
    if moment.utcoffset() is None:
        return dateformat.format(moment, DATETIME_SECONDS_FORMAT)
    return dateformat.format(moment.astimezone(UTC), DATETIME_SECONDS_FORMAT) + " UTC"
