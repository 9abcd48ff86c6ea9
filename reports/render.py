"""Rendering a report document: HTML through the Django template `templates/reports/report.html` (one
standalone file: inline CSS with print rules, figures inline as SVG, thumbnails as data URIs), and PDF by
WeasyPrint from that HTML.

Determinism. The HTML is a pure function of the document (and the signatures passed in). The PDF is
written with fixed metadata: title, creator, the document's `as_of` as both creation and modification
date (never the clock), and the content hash as the PDF file identifier; WeasyPrint then writes the same
bytes for the same HTML with the same WeasyPrint, pydyf, fontTools and system fonts. A different font
set or library version changes the bytes (font subsets, glyph positions), not the text: so a PDF is
verified against the stored bytes' SHA-256, and its numbers against the stored JSON (docs/reports.md)."""
from __future__ import annotations

import logging
from datetime import datetime

from django.template.loader import render_to_string

from .criteria import metric_kind
from .document import document_hash
from .figures import report_figures
from .finetuning import finetuning_context

GENERATOR = "Med-R2 Studio model report"
# (label, path in a model's performance entry, number kind)
HEADLINE_ROWS = (
    ("Step accuracy", "step_accuracy", "pct"),
    ("Accuracy over answered items", "answered_accuracy", "pct"),
    ("Chain accuracy (every step right)", "chain_accuracy", "pct"),
    ("Guess rate (last step right after a wrong step)", "guess_rate", "pct"),
    ("Abstention rate (all kinds)", "abstention_rate", "pct"),
    ("Unparseable rate (all kinds)", "unparseable_rate", "pct"),
    ("Error rate (all kinds)", "error_rate", "pct"),
    ("CircularEval accuracy", "circular_eval.accuracy", "pct"),
    ("Accuracy on image-necessary items", "image_necessary", "pct"),
)
GROUNDING_ROWS = (
    ("Box items: mean IoU", "grounding.mean_iou_ci", "num"),
    ("Box items: hit rate (IoU ≥ 0.5)", "grounding.hit_rate", "pct"),
    ("Chains right for the right reason", "grounding.grounded_correct", "pct"),
    ("Answer + box items: mean IoU", "answer_box.mean_iou_ci", "num"),
    ("Answer + box items: right answer and box", "answer_box.grounded_correct", "pct"),
)
ROBUSTNESS_FIELDS = (
    ("drop", "Drop: clean − adversarial accuracy on the same items", "pp"),
    ("harmful_flip_rate", "Harmful flips: wrong under the perturbation where the clean answer was right", "pct"),
    ("cue_adoption_corrected", "Cue adoption beyond what the clean answer already shared with the cue", "pp"),
)
STAGE_KEYS = ("1", "2", "3", "4")
DIMENSION_TITLES = {"modality": "Modality", "body_region": "Body region", "category": "Task category"}


class _SvgStyleNoise(logging.Filter):
    """WeasyPrint's HTML cascade reports every SVG presentation property of an inline figure (fill,
    stroke, ...) as an unknown CSS property, though its SVG renderer draws them; drop only those lines."""

    SVG_PROPERTIES = ("fill", "stroke", "text-anchor", "clip-path", "opacity", "font", "dominant-baseline")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith("Ignored `") and "unknown property" in message
                    and message[9:].startswith(self.SVG_PROPERTIES))


logging.getLogger("weasyprint").addFilter(_SvgStyleNoise())


def _path(entry: dict | None, path: str):
    for part in path.split("."):
        entry = entry.get(part) if isinstance(entry, dict) else None
    return entry


def _metric_rows(models: list[dict], entries: dict, rows) -> list[dict]:
    return [{"label": label, "kind": kind, "cells": [_path(entries[m["key"]], path) for m in models]}
            for label, path, kind in rows]


def _pdf_date(as_of: str | None) -> str:
    """The document's time as a W3C date to the second (what WeasyPrint writes into the PDF)."""
    if not as_of:
        return "2000-01-01T00:00:00+00:00"
    return datetime.fromisoformat(as_of).replace(microsecond=0).isoformat()


def _stage_tables(document: dict) -> list[dict]:
    """Stage × model tables: every chain (and conditional on the earlier steps being right), then the same
    chains at every stage (those reaching S4): accuracy, chance-corrected accuracy and the drop from S1."""
    models, perf = document["models"], document["sections"]["performance"]["models"]
    chains = ", ".join(f"{m['label']} {perf[m['key']]['stage_degradation']['chains']}" for m in models)
    specs = (("Every chain", "pct", lambda p, st: (p["by_stage"] or {}).get(st)),
             ("Every chain, earlier steps right (conditional)", "pct",
              lambda p, st: ((p["by_stage"] or {}).get(st) or {}).get("conditional")),
             (f"Same chains (chains: {chains})", "pct",
              lambda p, st: (p["stage_degradation"]["clean"].get(st) or {}).get("accuracy")),
             ("Same chains, chance-corrected", "pct",
              lambda p, st: (p["stage_degradation"]["clean"].get(st) or {}).get("chance_corrected")),
             ("Same chains, drop from S1", "pp", lambda p, st: p["stage_degradation"]["drop"].get(st)))
    return [{"title": title, "kind": kind, "rows": [
        {"name": document["labels"]["stages"].get(st, f"S{st}"), "cells": [get(perf[m["key"]], st) for m in models]}
        for st in STAGE_KEYS]} for title, kind, get in specs]


def _robustness_tables(document: dict) -> list[dict]:
    """One kind × model table per measure (drop, harmful flips, cue adoption), kinds without any value left
    out; a row names the kind's effect and its pairs per model."""
    models, robust = document["models"], document["sections"]["robustness"]["models"]
    tables = []
    for field, title, kind in ROBUSTNESS_FIELDS:
        rows = []
        for k in document["sections"]["robustness"]["kinds"]:
            entries = [robust[m["key"]]["kinds"].get(k) or {} for m in models]
            cells = [e.get(field) for e in entries]
            if any(c and c.get("value") is not None for c in cells):
                rows.append({"label": document["labels"]["kinds"].get(k, k),
                             "effect": next((e["effect"] for e in entries if e.get("effect")), ""), "cells": cells})
        tables.append({"title": title, "kind": kind, "rows": rows})
    return tables


def report_context(document: dict, *, signatures=()) -> dict:
    """Everything the template shows, as lists in the document's model order (templates cannot look up a
    dict by a variable key). `signatures`: [{"meaning", "name", "role", "signed_at"}] already checked
    against this document's hash by the caller; they are not part of the document."""
    s = document["sections"]
    models = document["models"]
    perf, robust = s["performance"]["models"], s["robustness"]["models"]
    labels = {m["key"]: m for m in models}
    breakdown_tables = []
    for dimension, title in DIMENSION_TITLES.items():
        rows = s["performance"]["breakdowns"].get(dimension) or []
        groups = sorted({r["group"] for r in rows})
        cells = {(r["model"], r["group"]): r for r in rows}
        breakdown_tables.append({"key": dimension, "title": title, "rows": [
            {"group": g, "cells": [cells.get((m["key"], g)) for m in models]} for g in groups]})
    by_meaning = {}
    for sig in signatures:
        by_meaning.setdefault(sig.get("meaning"), []).append(sig)
    return {
        "doc": document, "s": s, "models": models, "content_hash": document_hash(document),
        "pdf_date": _pdf_date(document.get("as_of")), "generator": GENERATOR,
        "titles": {e["key"]: f"{e['number']}. {e['title']}" for e in document["section_order"]},
        "figures": report_figures(document),
        "identity": [{"model": m, **s["model_identity"]["models"][m["key"]]} for m in models],
        "headline": _metric_rows(models, perf, HEADLINE_ROWS),
        "grounding": _metric_rows(models, perf, GROUNDING_ROWS),
        "stage_tables": _stage_tables(document),
        "breakdowns": breakdown_tables,
        "comparisons": [{**c, "a_label": labels[c["a"]]["label"], "b_label": labels[c["b"]]["label"]}
                        for c in s["performance"]["comparisons"] if c["a"] in labels and c["b"] in labels],
        "robustness": _robustness_tables(document),
        "reliance": [{"model": m, "hint": robust[m["key"]]["hint_reliance"],
                      "visual": robust[m["key"]]["visual_reliance"], "premise": robust[m["key"]]["premise"]}
                     for m in models],
        "finetuning": finetuning_context(document),
        "dose": [{"level": lvl, "cells": [robust[m["key"]]["dose_response"].get(lvl) for m in models]}
                 for lvl in ("clean", "0.7", "0.5", "0.3")
                 if any(lvl in robust[m["key"]]["dose_response"] for m in models)],
        "errors": [{"model": m, **s["error_analysis"]["models"][m["key"]]} for m in models],
        "corrections": [{**c, "label": labels.get(c["model"], {}).get("label", c["model"])}
                        for c in s["error_analysis"]["corrections"]["corrections"]],
        "acceptance": [{**r, "label": labels.get(r["model"], {}).get("label", r["model"]),
                        "kind": r.get("kind") or metric_kind(r["metric"])} for r in s["acceptance"]["results"]],
        "signoff": [{**m, "signatures": by_meaning.get(m["meaning"], [])} for m in s["signoff"]["meanings"]],
    }


def render_html(document: dict, *, signatures=()) -> str:
    """The report as one standalone HTML document."""
    return render_to_string("reports/report.html", report_context(document, signatures=signatures))


def _weasyprint():
    """WeasyPrint's HTML and URLFetcher, loaded when a PDF is first asked for (it loads pango). Importing it
    sets Pillow's process-wide `ImageFile.LOAD_TRUNCATED_IMAGES` to True, which would make every later
    image decode in the process (ingest on the same worker) accept truncated files silently; the flag is put
    back as it was. Reports embed no raster images (figures are SVG), so WeasyPrint never needs it."""
    from PIL import ImageFile

    strict = ImageFile.LOAD_TRUNCATED_IMAGES
    try:
        from weasyprint import HTML, URLFetcher
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = strict
    return HTML, URLFetcher


def render_pdf(document: dict, *, signatures=(), html: str | None = None) -> bytes:
    """The report as PDF (WeasyPrint, from `render_html`'s output or the `html` given). Only data: URLs may
    be fetched: the document is self-contained, and rendering never reaches a file or the network."""
    HTML, URLFetcher = _weasyprint()

    html = render_html(document, signatures=signatures) if html is None else html
    return HTML(string=html, url_fetcher=URLFetcher(allowed_protocols={"data"})).write_pdf(
        pdf_identifier=document_hash(document).encode("ascii"), uncompressed_pdf=False)
