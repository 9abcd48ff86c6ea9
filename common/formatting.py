"""One way to write a value on a page: numbers, percentages, p-values, dates, plurals, keys and dicts.

Every template reaches these through the `medr2_format` tag library (common/templatetags); views and
selectors that build text call them directly, so a number reads the same on every page.

Conventions (docs/architecture.md, "Formatting on pages"):
- a proportion is a percentage with one decimal: ``pct(0.5483)`` → "54.8%"; an interval of proportions
  "[50.1, 60.2]%"; a difference of proportions in signed percentage points "+9.1 pp", its interval
  "[-3.2, +5.0] pp";
- other numbers: three significant digits ("0.523", "12.3", "1,204"), or fixed decimals when asked
  (IoU, κ: two);
- a p-value with its test's name: "p < 0.0001", "p = 0.032"; test codes (``chi2_cc``) have names;
- one date format: "2 Dec 2026, 14:05" (with seconds where they matter: "2 Dec 2026, 14:05:09");
- a missing value is an em dash, never "None", "nan" or a blank;
- booleans read "yes" / "no"; lists are joined with commas; dict keys are humanised
  (``weak_grounding`` → "Weak grounding"); a server path shows only its last part.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from pathlib import PureWindowsPath

MISSING = "—"
#: the platform's one date format (Django date-format characters): "2 Dec 2026, 14:05"
DATETIME_FORMAT = "j M Y, H:i"
DATETIME_SECONDS_FORMAT = "j M Y, H:i:s"
DATE_FORMAT = "j M Y"

#: names of the statistical tests whose codes the scoring code stores (workers/scoring/stats.py `mcnemar`,
#: validity/shortcuts/stats.py, finetune/comparison.py)
TEST_NAMES = {
    "exact": "McNemar's exact binomial test",
    "chi2_cc": "McNemar's χ² test with continuity correction",
    "chi2": "χ² goodness-of-fit test",
    "mcnemar": "McNemar's test",
    "bootstrap": "paired cluster bootstrap",
}

#: words written in a fixed way inside humanised keys
WORDS = {
    "iou": "IoU", "id": "ID", "ids": "IDs", "uid": "UID", "uids": "UIDs", "url": "URL", "api": "API",
    "json": "JSON", "csv": "CSV", "sha256": "SHA-256", "dicom": "DICOM", "nifti": "NIfTI", "png": "PNG",
    "lora": "LoRA", "ct": "CT", "mr": "MR", "hu": "HU", "ci": "CI", "gpu": "GPU", "cpu": "CPU", "vlm": "VLM",
    "f1": "F1", "s1": "S1", "s2": "S2", "s3": "S3", "s4": "S4", "qa": "QA", "pdf": "PDF", "html": "HTML",
}
#: keys with a fixed label wherever a dict of them is shown (model parameters, records)
KEY_LABELS = {
    "path": "Local weights", "adapter": "Adapter", "api_key_env": "API key variable", "base_url": "Server URL",
    "dtype": "Number type", "n": "n", "k": "k",
}
#: keys whose numbers are overlaps or agreement coefficients: two decimals
TWO_DECIMAL_KEYS = re.compile(r"(^|_)(iou|kappa|alpha|f1|priority)($|_)")
#: roots of server paths that never reach a page whole
_PATH_ROOTS = ("tmp", "work", "home", "var", "srv", "opt", "mnt", "data", "root", "usr", "Users", "private", "app",
               "etc", "media", "scratch")
_PATH_IN_TEXT = re.compile(r"(?<![\w.:/-])(?:~|/(?:" + "|".join(_PATH_ROOTS) + r"))(?:/[^\s'\"<>()\[\],;]*)+")


def is_missing(value) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def _number(value) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def _no_negative_zero(text: str) -> str:
    return text[1:] if text.startswith("-") and not any(c in "123456789" for c in text) else text


# ---------------------------------------------------------------- numbers

def pct(value, digits: int = 1) -> str:
    """A proportion in [0, 1] as a percentage: 0.5483 → "54.8%"."""
    number = _number(value)
    if number is None:
        return MISSING
    return _no_negative_zero(f"{100 * number:.{int(digits)}f}") + "%"


def pp(value, digits: int = 1) -> str:
    """A difference of proportions in signed percentage points: 0.091 → "+9.1 pp"."""
    number = _number(value)
    if number is None:
        return MISSING
    text = f"{100 * number:+.{int(digits)}f}"
    return ("+" + text[1:] if text.startswith("-") and not any(c in "123456789" for c in text) else text) + " pp"


def interval(lo, hi, kind: str = "pct", digits: int | None = None) -> str:
    """A 95% interval: "[50.1, 60.2]%" (pct), "[-3.2, +5.0] pp" (pp), "[0.12, 0.45]" (num)."""
    a, b = _number(lo), _number(hi)
    if a is None or b is None:
        return MISSING
    if kind == "pct":
        d = 1 if digits is None else digits
        return f"[{pct(a, d)[:-1]}, {pct(b, d)[:-1]}]%"
    if kind == "pp":
        d = 1 if digits is None else digits
        return f"[{pp(a, d)[:-3]}, {pp(b, d)[:-3]}] pp"
    return f"[{num(a, digits)}, {num(b, digits)}]"


def num(value, digits: int | None = None) -> str:
    """A number: integers with thousands separators ("1,204"); other numbers to three significant digits
    ("0.523", "12.3", "1,235") or to `digits` fixed decimals."""
    number = _number(value)
    if number is None:
        return MISSING if is_missing(value) or isinstance(value, bool) else str(value)
    if digits is not None:
        return _no_negative_zero(f"{number:,.{int(digits)}f}")
    if isinstance(value, int) or number.is_integer() and abs(number) >= 1:
        return f"{round(number):,}"
    if number == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(number)))
    decimals = min(max(2 - magnitude, 0), 8)
    return _no_negative_zero(f"{number:,.{decimals}f}")


def pvalue(value) -> str:
    """"p < 0.0001", "p = 0.032", "p = 0.45", "p = 1"."""
    p = _number(value)
    if p is None:
        return MISSING
    if p < 0.0001:
        return "p < 0.0001"
    if p >= 0.995:
        return "p = 1" if p >= 1 else "p > 0.99"
    decimals = max(2, 1 - math.floor(math.log10(p)))
    return f"p = {p:.{decimals}f}"


def name_of_test(code) -> str:
    """The readable name of a test code ("chi2_cc" → "McNemar's χ² test with continuity correction")."""
    if is_missing(code):
        return ""
    return TEST_NAMES.get(str(code), humanize_key(str(code)).lower())


def plural(count, word: str) -> str:
    """"1 event", "2 events", "1,204 cases"; `word` may be "analysis,analyses" for an irregular plural."""
    singular, _, many = word.partition(",")
    if not many:
        many = (singular[:-1] + "ies" if singular.endswith("y") and singular[-2:-1] not in "aeiou"
                else singular + "es" if singular.endswith(("s", "x", "ch", "sh")) else singular + "s")
    n = _number(count)
    if n is None and hasattr(count, "__len__"):
        n = float(len(count))
    if n is None:
        return f"{MISSING} {many}"
    return f"{num(int(n) if n.is_integer() else n)} {singular if n == 1 else many}"


# ---------------------------------------------------------------- dates

def when(value, *, seconds: bool = False) -> str:
    """A moment in the platform's one format, in the current time zone: "2 Dec 2026, 14:05"; a date alone
    "2 Dec 2026"; ISO text is read first."""
    from django.utils import dateformat, timezone

    if is_missing(value):
        return MISSING
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, datetime):
        if timezone.is_aware(value):
            value = timezone.localtime(value)
        return dateformat.format(value, DATETIME_SECONDS_FORMAT if seconds else DATETIME_FORMAT)
    if isinstance(value, date):
        return dateformat.format(value, DATE_FORMAT)
    return str(value)


# ---------------------------------------------------------------- keys, values, paths

def humanize_key(key) -> str:
    """snake_case (or kebab-case) → sentence case with known acronyms: "weak_grounding" → "Weak grounding",
    "mean_iou" → "Mean IoU"."""
    text = str(key).strip()
    if not text:
        return ""
    if text in KEY_LABELS:
        return KEY_LABELS[text]
    words = [w for w in re.split(r"[_\s-]+", text) if w]
    out = [WORDS.get(w.lower(), w) for w in words]
    out[0] = out[0][:1].upper() + out[0][1:]
    return " ".join(out)


def _lower_first(label: str) -> str:
    """"Weak grounding" → "weak grounding", but "IoU" and "Model A" stay."""
    word = label.split(" ", 1)[0]
    return label[:1].lower() + label[1:] if word[1:] == "" or word[1:].islower() else label


def is_server_path(text) -> bool:
    """An absolute path on the server (or the user's home): never shown whole."""
    if not isinstance(text, str) or not text or any(c.isspace() for c in text) or "://" in text:
        return False
    if text.startswith("~/"):
        return True
    if re.match(r"^[A-Za-z]:\\", text):
        return True
    return text.startswith("/") and not text.startswith("//") and text.strip("/").count("/") >= 1


def file_name(path, default: str = "local weights") -> str:
    """The last part of a server path ("/srv/models/qwen2-vl" → "qwen2-vl"), or `default` without one."""
    if is_missing(path):
        return default
    text = str(path).rstrip("/\\")
    name = PureWindowsPath(text).name if "\\" in text else text.rsplit("/", 1)[-1]
    return name or default


def redact_paths(text) -> str:
    """Free text (an error message) with every server path cut to its last part."""
    if is_missing(text):
        return ""
    return _PATH_IN_TEXT.sub(lambda m: file_name(m.group(0), "…"), str(text))


def humanize_value(value, key: str = "") -> str:
    """One value as a person reads it: "—" for nothing, "yes"/"no", rounded numbers (two decimals for IoUs
    and agreement coefficients), lists joined with commas, a dict as "key value" pairs, a server path as
    its last part."""
    if is_missing(value):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if key and TWO_DECIMAL_KEYS.search(str(key).lower()) and isinstance(value, float):
            return num(value, 2)
        text = num(value)
        return text.rstrip("0").rstrip(".") if "." in text else text     # a setting: 0.5, not 0.500
    if isinstance(value, str):
        return file_name(value) if is_server_path(value) else value
    if isinstance(value, Mapping):
        if not value:
            return "none"
        return ", ".join(f"{_lower_first(humanize_key(k)) if str(k) == str(k).lower() else k} "
                         f"{humanize_value(v, str(k))}" for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        if not items:
            return "none"
        sep = "; " if any(isinstance(v, Mapping) for v in items) else ", "
        return sep.join(humanize_value(v, key) for v in items)
    return str(value)


def kv_rows(mapping, *, labels: Mapping[str, str] | None = None, skip: Iterable[str] = (),
            prefix: str = "") -> list[tuple[str, str]]:
    """A dict as (label, text) rows for a two-column table: keys humanised (or named by `labels`), nested
    dicts flattened into "Outer · inner" rows, values through `humanize_value`."""
    if not isinstance(mapping, Mapping):
        return [] if is_missing(mapping) else [(prefix or "Value", humanize_value(mapping))]
    labels = labels or {}
    skip = set(skip)
    rows: list[tuple[str, str]] = []
    for key, value in mapping.items():
        if key in skip:
            continue
        snake = str(key) == str(key).lower()
        label = labels.get(key) or (humanize_key(key) if snake else str(key))
        if prefix:
            inner = _lower_first(label) if snake and key not in labels else label
            label = f"{prefix} · {inner}"
        if isinstance(value, Mapping) and value:
            rows.extend(kv_rows(value, labels=labels, skip=skip, prefix=label))
        else:
            rows.append((label, humanize_value(value, str(key))))
    return rows


def answer_text(value) -> str:
    """A gold (or given) answer as text: options joined with commas, a box as "box (x0, y0)–(x1, y1)"."""
    if is_missing(value):
        return MISSING
    if isinstance(value, (list, tuple)):
        if len(value) == 4 and all(_number(v) is not None and not isinstance(v, str) for v in value):
            x0, y0, x1, y1 = (num(v, 0) if float(v).is_integer() else num(v, 1) for v in value)
            return f"box ({x0}, {y0})–({x1}, {y1})"
        return ", ".join(answer_text(v) for v in value) if value else "none"
    return humanize_value(value)
