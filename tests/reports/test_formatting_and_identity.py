"""The pure parts of the report: one way to write a number, and model parameters without secrets or
server locations."""
from __future__ import annotations

import json

import pytest

from reports.formatting import MISSING, fmt, fmt_interval, fmt_stat, fmt_time
from reports.identity import model_identity, public_parameters, sha256_text


@pytest.mark.parametrize(("value", "kind", "text"), [
    (0.7857142857, "pct", "78.6%"), (1.0, "pct", "100.0%"), (0.0, "pct", "0.0%"),
    (-0.0909, "pp", "-9.1 pp"), (0.2142857, "pp", "+21.4 pp"), (-0.00001, "pp", "+0.0 pp"),
    (0.5232577, "num", "0.523"), (12045, "int", "12,045"), (0.25, "p", "0.250"), (0.0002, "p", "<0.001"),
    (None, "pct", MISSING), (float("nan"), "num", MISSING), (True, "int", MISSING),
])
def test_every_kind_of_number_is_written_one_way(value, kind, text):
    assert fmt(value, kind) == text


def test_an_interval_and_a_stat_read_as_one_line_and_a_missing_interval_is_a_dash():
    stat = {"k": 11, "n": 14, "value": 0.7857142857, "lo": 0.75, "hi": 0.8333333}
    assert fmt_interval(stat) == "75.0–83.3%"
    assert fmt_stat(stat) == "78.6% (75.0–83.3%; 11/14)"
    assert fmt_interval({"value": 0.1, "lo": None, "hi": None}) == MISSING
    assert fmt_interval({"value": -0.1, "lo": -0.25, "hi": 0.0, "n": 11}, "pp") == "-25.0 to +0.0 pp"
    with pytest.raises(ValueError):
        fmt(0.5, "percent")


def test_a_stored_time_is_written_to_the_second_in_utc_in_the_platforms_date_format():
    assert fmt_time("2026-12-01T18:34:24.773722+00:00") == "1 Dec 2026, 18:34:24 UTC"
    assert fmt_time("2026-12-01T20:34:24+02:00") == "1 Dec 2026, 18:34:24 UTC"
    assert fmt_time(None) == MISSING


def test_secrets_and_server_locations_are_withheld_by_name_and_by_look():
    params = {
        "api_key": "sk-abc123456789", "token": "t0k", "weights_path": "/srv/models/x", "base_url": "http://10.0.0.1/v1",
        "api_key_env": "MEDR2_OPENAI_API_KEY", "model": "Qwen/Qwen2-VL-7B", "max_new_tokens": 16, "temperature": 0.0,
        "device": "cuda:0", "note": "Bearer abc.def", "cache": "~/cache", "mirror": "https://hub.example.org/x",
        "extra_body": {"headers": {"Authorization": "x"}, "top_k": 5, "files": ["/etc/passwd", "ok"]},
    }
    out = public_parameters(params)
    text = json.dumps(out)
    for leaked in ("sk-abc123456789", "t0k", "/srv/models/x", "10.0.0.1", "Bearer", "~/cache", "hub.example.org",
                   "/etc/passwd"):
        assert leaked not in text
    assert out["withheld"] == sorted(["api_key", "base_url", "cache", "extra_body.files[0]",
                                      "extra_body.headers.Authorization", "mirror", "note", "token", "weights_path"])
    kept = out["parameters"]
    assert kept["api_key_env"] == "MEDR2_OPENAI_API_KEY"    # names a variable, not its value
    assert kept["model"] == "Qwen/Qwen2-VL-7B" and kept["device"] == "cuda:0" and kept["max_new_tokens"] == 16
    assert kept["extra_body"] == {"files": ["ok"], "headers": {}, "top_k": 5}


def test_a_long_value_is_pinned_by_its_hash_not_printed():
    table = {f"category-{i}": {"text": f"the most frequent gold answer {i}", "letter": "A"} for i in range(20)}
    out = public_parameters({"table": table, "seed": 1})
    assert out["pinned"] == ["table"] and out["parameters"]["seed"] == 1
    assert out["parameters"]["table"]["sha256"] == sha256_text(
        json.dumps(table, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    assert "most frequent gold" not in json.dumps(out)


def test_model_identity_checks_the_template_hash_and_reads_only_a_recorded_weights_hash():
    snap = {"name": "m", "backend": "transformers", "prompt_template": "Q: {prompt}",
            "prompt_template_hash": sha256_text("Q: {prompt}"), "parameters": {"path": "/models/m"}}
    ident = model_identity(snap, role="model", local_weights=True)
    assert ident["prompt_template_hash_matches"] is True and ident["weights_sha256"] is None
    assert ident["withheld"] == ["path"] and "/models/m" not in json.dumps(ident)
    snap["prompt_template_hash"] = "0" * 64
    snap["parameters"]["weights_sha256"] = "AB" * 32
    ident = model_identity(snap, role="model", local_weights=True)
    assert ident["prompt_template_hash_matches"] is False and ident["weights_sha256"] == "ab" * 32
