"""The model report of a real scored run (phantom images → chains → every variant kind → three models run by
the real batch code → `run_score`): every section is there, every number is the run's own, the same inputs
give the same hash, criteria are judged, and no secret or server path reaches the JSON, the HTML or the PDF."""
from __future__ import annotations

import io
import json

import pytest
from pypdf import PdfReader

from reports.document import SECTIONS, canonical_json, document_hash, report_document

from .conftest import NESTED_SECRET, SECRET_KEY_VALUE, SECRET_PATH, SECRET_URL

pytestmark = pytest.mark.django_db
CRITERIA = [
    {"metric": "step_accuracy", "model": "oracle", "op": ">=", "threshold": 0.9},
    {"metric": "chain_accuracy", "model": "chance", "op": ">=", "threshold": 0.9},
    {"metric": "auroc", "model": "*", "op": ">=", "threshold": 0.8},
]


def _pdf_text(pdf: bytes) -> str:
    return "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(pdf)).pages)


def test_the_document_has_the_eleven_sections_and_the_runs_own_numbers(scored_run):
    run = scored_run(images=3)
    doc = report_document(runs=[run], scope="Triage support for chest CT", limitations="Phantoms only.")
    assert [(e["number"], e["key"]) for e in doc["section_order"]] == [(i, k) for i, (k, _) in
                                                                       enumerate(SECTIONS, start=1)]
    assert set(doc["sections"]) == {k for k, _ in SECTIONS}
    assert [m["name"] for m in doc["models"]] == ["chance", "follower", "oracle"]
    assert {m["role"] for m in doc["models"]} == {"blind baseline", "planted simulation"}
    assert len({m["colour"] for m in doc["models"]}) == 3
    for m in doc["models"]:   # reused, not recomputed: the stored metrics of the run, number for number
        stored = run.metrics["models"][str(m["endpoint"])]
        perf = doc["sections"]["performance"]["models"][m["key"]]
        assert perf["step_accuracy"] == stored["step_accuracy"]
        assert perf["chain_accuracy"] == stored["chain_accuracy"]
        assert perf["stage_degradation"]["clean"] == stored["stage_degradation"]["by_kind"]["clean"]
        assert doc["sections"]["robustness"]["models"][m["key"]]["kinds"]["misleading_hint"]["drop"] == \
            stored["robustness"]["misleading_hint"]["drop"]
    by_modality = doc["sections"]["performance"]["breakdowns"]["modality"]
    assert {r["model"] for r in by_modality} == {m["key"] for m in doc["models"]}
    oracle = next(m for m in doc["models"] if m["name"] == "oracle")
    assert all(r["value"] == 1.0 for r in by_modality if r["model"] == oracle["key"])   # clean only: oracle is right
    data = doc["sections"]["data"]["evaluated"]
    assert data["items"] == sum(data["by_stage"].values()) > 0 and data["predictions"] == run.metrics["n_predictions"]
    logging = doc["sections"]["logging"]
    assert logging["verification"]["ok"] and len(logging["verification"]["head_hash"]) == 64
    assert logging["events"]["by_action"]["workers.run.score"] == 1
    assert doc["sections"]["limitations"]["author"] == "Phantoms only."
    assert {f["code"] for f in doc["sections"]["limitations"]["generated"]} >= {"no_release", "not_a_clinical_model"}
    assert [s["meaning"] for s in doc["sections"]["signoff"]["meanings"]] == ["author", "reviewer", "approver"]
    examples = doc["sections"]["error_analysis"]["models"]
    assert examples[oracle["key"]]["examples"] == []        # the oracle is never wrong on a clean item
    chance = next(m for m in doc["models"] if m["name"] == "chance")
    assert examples[chance["key"]]["examples"][0]["thumbnail"]["png_base64"]
    json.dumps(doc, allow_nan=False)


def test_the_same_inputs_give_the_same_document_and_hash(scored_run, curator):
    from releases.services import release_create

    run = scored_run(images=3)
    release = release_create(actor=curator, version="1.0.0", description="demo datasheet")
    first = report_document(runs=[run], release=release, criteria=CRITERIA, scope="s")
    second = report_document(runs=[run], release=release, criteria=CRITERIA, scope="s")
    assert canonical_json(first) == canonical_json(second) and document_hash(first) == document_hash(second)
    assert document_hash(json.loads(canonical_json(first))) == document_hash(first)   # survives storage as JSON
    assert document_hash(report_document(runs=[run], release=release, criteria=CRITERIA, scope="t")) != \
        document_hash(first)
    data = first["sections"]["data"]
    assert data["release"]["version"] == "1.0.0" and data["release"]["description"] == "demo datasheet"
    assert data["release_coverage"]["evaluated_not_in_release"] == 0
    assert data["release_coverage"]["evaluated_in_release"] == data["evaluated"]["items"]


def test_criteria_pass_fail_or_are_not_evaluable_against_the_reports_numbers(scored_run):
    run = scored_run(images=3)
    doc = report_document(runs=[run], criteria=CRITERIA)
    acceptance = doc["sections"]["acceptance"]
    names = {m["key"]: m["name"] for m in doc["models"]}
    got = [(r["criterion"], names.get(r["model"], r["model"]), r["status"]) for r in acceptance["results"]]
    assert got == [(1, "oracle", "pass"), (2, "chance", "fail"), (3, "chance", "not evaluable"),
                   (3, "follower", "not evaluable"), (3, "oracle", "not evaluable")]
    oracle = next(r for r in acceptance["results"] if r["criterion"] == 1)
    assert oracle["observed"] == run.metrics["models"][str(oracle["model"].split(":")[1])]["step_accuracy"]["value"]
    assert acceptance["summary"] == {"passed": 1, "failed": 1, "not_evaluable": 3, "verdict": "fail"}


def test_no_secret_or_server_path_reaches_the_json_the_html_or_the_pdf(run_with_secrets):
    from reports.render import render_html, render_pdf

    doc = report_document(runs=[run_with_secrets])
    html = render_html(doc)
    pdf = render_pdf(doc, html=html)
    texts = {"json": canonical_json(doc).decode(), "html": html, "pdf": _pdf_text(pdf)}
    for where, text in texts.items():
        for secret in (SECRET_KEY_VALUE, SECRET_PATH, SECRET_URL, NESTED_SECRET, "10.20.30.40", "secret-weights"):
            assert secret not in text, f"{secret!r} leaked into the {where}"
    identity = next(v for v in doc["sections"]["model_identity"]["models"].values() if v["name"] == "chance")
    assert identity["withheld"] == ["api_key", "base_url", "extra_body.headers.authorization", "weights_path"]
    assert identity["parameters"] == {"extra_body": {"headers": {}, "top_k": 5}, "seed": 2}
    assert "weights_path" in texts["pdf"]   # the names of what was withheld are shown, never the values



def test_a_long_item_filter_is_shown_as_its_count_and_hash():
    from reports.document import LONGEST_LISTED, shown_filters

    ids = list(range(1, 5_496))
    shown = shown_filters({"ids": ids, "status": ["approved"]})
    assert shown["status"] == ["approved"]
    assert shown["ids"]["count"] == 5_495 and len(shown["ids"]["sha256"]) == 64
    assert shown_filters({"ids": ids[:LONGEST_LISTED]}) == {"ids": ids[:LONGEST_LISTED]}
    assert shown_filters(None) == {}
