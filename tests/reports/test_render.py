"""Rendering a report: figures with deterministic bytes and one colour per model, the PDF's text (read back
with pypdf) holding every section heading and the same numbers as the JSON, identical bytes on a second
render, and the `report_render` command writing the three files with their hashes."""
from __future__ import annotations

import hashlib
import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from pypdf import PdfReader

from reports.document import document_hash, report_document
from reports.figures import report_figures
from reports.formatting import fmt
from reports.render import render_html, render_pdf

pytestmark = pytest.mark.django_db


def _pdf_text(pdf: bytes) -> str:
    text = "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(pdf)).pages)
    return re.sub(r"[ \t]+", " ", text)


def test_figures_are_byte_identical_across_renders_and_keep_each_models_colour(scored_run):
    doc = report_document(runs=[scored_run(images=3)])
    first, second = report_figures(doc), report_figures(doc)
    assert set(first) >= {"stage_degradation", "forest_modality", "forest_body_region", "forest_category",
                          "kind_stage", "dose_response"}
    for key in first:
        assert first[key]["svg"].encode() == second[key]["svg"].encode(), f"{key} differs between renders"
        assert "<dc:date>" not in first[key]["svg"]
    for m in doc["models"]:   # a line, point or title of every model in its colour, in every figure with lines
        for key in ("stage_degradation", "forest_modality", "dose_response"):
            assert m["colour"] in first[key]["svg"], f"{m['label']} lacks its colour in {key}"
    ids = re.findall(r'\bid="([^"]+)"', "".join(f["svg"] for f in first.values()))
    assert len(ids) == len(set(ids)), "figures inline in one page must not share element ids"


def test_the_pdf_holds_every_section_and_the_same_numbers_as_the_json_and_renders_identically(scored_run):
    doc = report_document(runs=[scored_run(images=3)], criteria=[
        {"metric": "chain_accuracy", "model": "*", "op": ">=", "threshold": 0.6}])
    html = render_html(doc)
    pdf = render_pdf(doc, html=html)
    assert pdf.startswith(b"%PDF-") and render_pdf(doc, html=html) == pdf and render_pdf(doc) == pdf
    text = _pdf_text(pdf)
    for entry in doc["section_order"]:
        heading = f"{entry['number']}. {entry['title']}"
        assert heading in html and heading in text, heading
    assert document_hash(doc) in text.replace("\n", "")
    perf = doc["sections"]["performance"]["models"]
    for m in doc["models"]:
        p = perf[m["key"]]
        for name in ("step_accuracy", "chain_accuracy", "answered_accuracy", "abstention_rate"):
            number = fmt(p[name]["value"], "pct")
            assert number in text, f"{m['label']}: {name} {number} is not in the PDF"
        assert fmt(p["grounding"]["mean_iou_ci"]["value"], "num") in text
    for r in doc["sections"]["acceptance"]["results"]:
        assert fmt(r["observed"], r["kind"]) in text
    assert doc["sections"]["acceptance"]["summary"]["verdict"] in text
    assert doc["sections"]["logging"]["verification"]["head_hash"] in text.replace("\n", "")
    reader = PdfReader(io.BytesIO(pdf))
    assert reader.metadata.title == doc["title"] and reader.metadata.creator == "Med-R2 Studio model report"
    assert reader.metadata["/CreationDate"] == reader.metadata["/ModDate"]   # the runs' time, not the clock


def test_the_command_writes_json_html_and_pdf_and_prints_their_hashes(scored_run, tmp_path):
    run = scored_run(images=3)
    criteria = tmp_path / "criteria.json"
    criteria.write_text(json.dumps([{"metric": "step_accuracy", "model": "*", "op": ">=", "threshold": 0.5}]))
    out = io.StringIO()
    call_command("report_render", "--runs", str(run.pk), "--scope", "demo", "--criteria", str(criteria),
                 "--out", str(tmp_path / "report"), stdout=out)
    printed = dict(line.split("  ", 1)[::-1] for line in out.getvalue().splitlines() if "  " in line)
    for name in ("report.json", "report.html", "report.pdf"):
        path = tmp_path / "report" / name
        assert printed[str(path)] == hashlib.sha256(path.read_bytes()).hexdigest()
    document = json.loads((tmp_path / "report" / "report.json").read_text())
    # report.json is the canonical form: its SHA-256 is the content hash signatures bind to
    assert hashlib.sha256((tmp_path / "report" / "report.json").read_bytes()).hexdigest() == document_hash(document)
    assert f"content hash {document_hash(document)}" in out.getvalue()
    assert document["sections"]["scope"]["scope"] == "demo"
    with pytest.raises(CommandError, match="no run with id 999999"):
        call_command("report_render", "--runs", "999999", "--out", str(tmp_path / "x"))


def test_loading_weasyprint_leaves_pillow_strict(monkeypatch):
    """Importing WeasyPrint sets Pillow's process-wide LOAD_TRUNCATED_IMAGES; the report's loader puts it
    back, so a worker that rendered a PDF still refuses truncated images elsewhere."""
    import sys

    from PIL import ImageFile

    from reports import render

    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", False)
    for name in [m for m in sys.modules if m == "weasyprint" or m.startswith("weasyprint.")]:
        monkeypatch.delitem(sys.modules, name)            # a first import, as in a fresh worker
    html, fetcher = render._weasyprint()
    assert html.__name__ == "HTML" and ImageFile.LOAD_TRUNCATED_IMAGES is False
