"""One way to write a value on a page (common/formatting.py): percentages, intervals, numbers, p-values and
test names, plurals, the one date format, humanised keys and values, server paths, answers, dict tables."""
from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from django.template import Context, Template

from common.formatting import (
    MISSING,
    answer_text,
    file_name,
    humanize_key,
    humanize_value,
    interval,
    is_server_path,
    kv_rows,
    name_of_test,
    num,
    pct,
    plural,
    pp,
    pvalue,
    redact_paths,
    when,
)


@pytest.mark.parametrize(("value", "text"), [
    (0.5483, "54.8%"), (1, "100.0%"), (0, "0.0%"), (-0.00001, "0.0%"), (None, MISSING), (float("nan"), MISSING),
    ("", MISSING), (True, MISSING),
])
def test_a_proportion_is_a_percentage_with_one_decimal(value, text):
    assert pct(value) == text


def test_differences_are_signed_percentage_points_and_intervals_have_one_shape():
    assert pp(0.091) == "+9.1 pp" and pp(-0.0321) == "-3.2 pp" and pp(-0.00001) == "+0.0 pp" and pp(None) == MISSING
    assert interval(0.102, 0.25) == "[10.2, 25.0]%"
    assert interval(-0.032, 0.05, "pp") == "[-3.2, +5.0] pp"
    assert interval(0.1234, 0.4567, "num", 2) == "[0.12, 0.46]"
    assert interval(None, 0.3) == MISSING


@pytest.mark.parametrize(("value", "digits", "text"), [
    (1204, None, "1,204"), (0.523457, None, "0.523"), (12.345, None, "12.3"), (12345.6, None, "12,346"),
    (0.000123456, None, "0.000123"), (3.0, None, "3"), (0, None, "0"), (0.5234, 2, "0.52"), (-0.0001, 2, "0.00"),
    (0.81234567890123456, 2, "0.81"), (None, None, MISSING),
])
def test_numbers_are_rounded_to_three_significant_digits_or_fixed_decimals(value, digits, text):
    assert num(value, digits) == text


@pytest.mark.parametrize(("p", "text"), [
    (0.00001, "p < 0.0001"), (0.0321, "p = 0.032"), (0.45, "p = 0.45"), (1.0, "p = 1"), (0.999, "p > 0.99"),
    (0.00042, "p = 0.00042"), (None, MISSING),
])
def test_p_values_read_as_sentences(p, text):
    assert pvalue(p) == text


def test_every_test_code_the_scoring_code_stores_has_a_name():
    """McNemar's `method` (workers/scoring/stats.py) and the validity length-rank test."""
    from workers.scoring.stats import mcnemar

    methods = {mcnemar(b, c)["method"] for b, c in ((0, 0), (3, 1), (40, 12))}
    assert methods == {"exact", "chi2_cc"}
    for code in methods | {"chi2"}:
        name = name_of_test(code)
        assert name and "_" not in name and name != code
    assert name_of_test("chi2_cc") == "McNemar's χ² test with continuity correction"


@pytest.mark.parametrize(("count", "word", "text"), [
    (1, "event", "1 event"), (2, "event", "2 events"), (0, "event", "0 events"), (1204, "case", "1,204 cases"),
    (2, "query", "2 queries"), (2, "day", "2 days"), (3, "box", "3 boxes"), (2, "analysis,analyses", "2 analyses"),
    ([1, 2], "item", "2 items"), (1.0, "pair", "1 pair"),
])
def test_plurals_agree_with_their_count(count, word, text):
    assert plural(count, word) == text


def test_one_date_format_everywhere(settings):
    settings.TIME_ZONE = "UTC"
    moment = datetime(2026, 12, 2, 14, 5, 9, tzinfo=UTC)
    assert when(moment) == "2 Dec 2026, 14:05"
    assert when(moment, seconds=True) == "2 Dec 2026, 14:05:09"
    assert when(date(2026, 12, 2)) == "2 Dec 2026"
    assert when("2026-12-02T14:05:09+00:00") == "2 Dec 2026, 14:05"
    assert when(None) == MISSING
    # Django's own date rendering (a datetime printed without a filter, |date) uses the same format
    rendered = Template("{{ m }}|{{ m|date }}|{% load medr2_format %}{{ m|when }}").render(Context({"m": moment}))
    assert rendered == "2 Dec 2026, 14:05|2 Dec 2026|2 Dec 2026, 14:05"


@pytest.mark.parametrize(("key", "text"), [
    ("weak_grounding", "Weak grounding"), ("mean_iou", "Mean IoU"), ("uids_remapped", "UIDs remapped"),
    ("PatientName", "PatientName"), ("box-label", "Box label"), ("path", "Local weights"), ("sha256", "SHA-256"),
])
def test_keys_read_in_sentence_case_with_their_acronyms(key, text):
    assert humanize_key(key) == text


def test_values_never_show_python_reprs_or_server_paths():
    assert humanize_value(None) == MISSING and humanize_value(True) == "yes" and humanize_value(False) == "no"
    assert humanize_value(["cyst in the liver"]) == "cyst in the liver"
    assert humanize_value([]) == "none" and humanize_value({}) == "none"
    assert humanize_value({"item": "step 2", "iou": 0.123456789}) == "item step 2, IoU 0.12"
    assert humanize_value(0.123456, "mean_iou") == "0.12" and humanize_value(0.123456) == "0.123"
    assert humanize_value(0.5) == "0.5" and humanize_value(1204.0) == "1,204" and humanize_value(0.001) == "0.001"
    assert humanize_value("/home/ana/models/qwen2-vl") == "qwen2-vl"
    assert humanize_value("http://10.0.0.1/v1") == "http://10.0.0.1/v1"      # a URL is not a server path
    assert humanize_value([{"a": 1}, {"a": 2}]) == "a 1; a 2"


def test_server_paths_show_only_their_last_part():
    assert is_server_path("/tmp/x/y") and is_server_path("~/cache") and is_server_path("C:\\models\\m")
    assert not is_server_path("/runs/") and not is_server_path("a/b") and not is_server_path("a path / b")
    assert file_name("/srv/models/qwen2-vl/") == "qwen2-vl" and file_name(None) == "local weights"
    text = redact_paths("OSError: /tmp/pytest-1/models/tiny-vlm/config.json not found (see /work/main/x.py); "
                        "http://host/tmp/a stays")
    assert text == "OSError: config.json not found (see x.py); http://host/tmp/a stays"


def test_answers_read_as_text_and_boxes_as_corners():
    assert answer_text(["cyst in the liver"]) == "cyst in the liver"
    assert answer_text(["A", "C"]) == "A, C"
    assert answer_text([12, 30, 40.5, 60]) == "box (12, 30)–(40.5, 60)"
    assert answer_text("B") == "B" and answer_text(None) == MISSING and answer_text(True) == "yes"


def test_a_dict_becomes_flat_rows_of_humanised_keys_and_values():
    rows = kv_rows({"status": ["approved"], "path": "/home/u/weights", "max_new_tokens": 16, "temperature": None,
                    "do_sample": False, "counts": {"removed": 3, "uids_remapped": 2}, "p": 0.5})
    assert rows == [("Status", "approved"), ("Local weights", "weights"), ("Max new tokens", "16"),
                    ("Temperature", MISSING), ("Do sample", "no"), ("Counts · removed", "3"),
                    ("Counts · UIDs remapped", "2"), ("P", "0.5")]
    assert kv_rows(None) == [] and kv_rows({}) == []


def test_the_kv_table_tag_renders_a_two_column_table_without_reprs():
    html = Template("{% load medr2_format %}{% kv_table m %}").render(Context({"m": {
        "flags": ["a", "b"], "ok": True, "nested": {"x_y": None}}}))
    assert "<th scope=\"row\">Flags</th><td>a, b</td>" in html and "<td>yes</td>" in html
    assert "Nested · x y" in html and "None" not in html and "['" not in html and "True" not in html
    assert "muted" in Template("{% load medr2_format %}{% kv_table m %}").render(Context({"m": {}}))
