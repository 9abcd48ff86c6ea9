"""The names of the codes that reach pages: detection rules, variant kinds, task categories, ...

Codes (``right_answer_wrong_evidence``, ``misleading_hint``, ``lesion_presence``) belong to the app that
defines them, above this layer; each app registers where its titles live in its `AppConfig.ready()`, and
every page, filter and API display field asks here (the `title_of` / `describe` template filters):

    register_titles("rule", {"model_consensus": Title("Models agree against gold", "Several models ...")})
    register_titles("category", category_titles)      # a callable: read when asked (names can be edited)

    title_of("rule", "model_consensus")   → "Models agree against gold"
    title_of("rule", "no_such_rule")      → "No such rule" (an unknown code is humanised, never shown raw)

Registered kinds: "rule" (adjudication/rules/titles.py), "variant_kind" (annotation/variants/titles.py),
"category" and "stage" (annotation, from the taxonomy), "verdict" and "case_status" (adjudication).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .formatting import humanize_key, humanize_value, plural


@dataclass(frozen=True)
class Title:
    title: str
    description: str = ""


Source = Mapping[str, "Title | str"] | Callable[[], Mapping[str, "Title | str"]]
_SOURCES: dict[str, Source] = {}


def register_titles(kind: str, source: Source) -> None:
    """Name the titles of one kind of code: a mapping, or a callable returning one (read at each lookup,
    so it may cache). Registering a kind again replaces it (apps' `ready()` may run twice in tests)."""
    _SOURCES[kind] = source


def titles(kind: str) -> dict[str, Title]:
    """Every registered title of `kind` (empty when nothing registered it)."""
    source = _SOURCES.get(kind)
    mapping = (source() if callable(source) else source) or {}
    return {code: t if isinstance(t, Title) else Title(str(t)) for code, t in mapping.items()}


def _lookup(kind: str, code) -> Title | None:
    source = _SOURCES.get(kind)
    if source is None or code is None:
        return None
    mapping = source() if callable(source) else source
    found = (mapping or {}).get(str(code))
    if found is None:
        return None
    return found if isinstance(found, Title) else Title(str(found))


def title_of(kind: str, code) -> str:
    """The title of `code`; an unregistered code is humanised ("wrong_visual_cue" → "Wrong visual cue")."""
    if code is None or code == "":
        return ""
    found = _lookup(kind, code)
    return found.title if found else humanize_key(code)


def description_of(kind: str, code) -> str:
    """The one-line description of `code`, or ""."""
    found = _lookup(kind, code)
    return found.description if found else ""


def filters_text(filters, empty: str = "") -> str:
    """Item filters (a run's, an audit's, a release's selection) as words: {"status": ["approved"],
    "category": ["margin"]} → "status: approved; category: Margin" (categories by name, never a Python repr);
    `empty` when there are none."""
    parts = []
    for key, value in (filters or {}).items():
        values = [v for v in (value if isinstance(value, (list, tuple, set)) else [value]) if v not in (None, "")]
        if not values:
            continue
        if key == "item_ids":
            parts.append(plural(len(values), "chosen item"))
            continue
        names = [title_of("category", v) if key in ("category", "categories") else humanize_value(v)
                 for v in values]
        parts.append(f"{humanize_key(key).lower()}: {', '.join(names)}")
    return "; ".join(parts) or empty
