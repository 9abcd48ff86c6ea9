"""Deterministic baselines: random, prior, null."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workers.backends import BackendError, GenerationRequest, load_backend
from workers.backends.baselines import NullBackend, PriorBackend, RandomBackend

BOX = re.compile(r"^\[(-?[\d.]+), (-?[\d.]+), (-?[\d.]+), (-?[\d.]+)\]$")
OPTIONS = ("pneumonia", "normal", "pleural effusion", "cardiomegaly", "atelectasis")


def requests(n: int = 40) -> list[GenerationRequest]:
    kinds = ["single_choice", "yes_no", "multi_choice", "box", "short_text"]
    out = []
    for key in range(n):
        kind = kinds[key % len(kinds)]
        options = ("yes", "no") if kind == "yes_no" else OPTIONS[: 2 + key % 4]
        out.append(GenerationRequest(key=key, prompt=f"q{key}", image=None, answer_type=kind, options=options,
                                     category="XR", image_size=(200 + key, 100 + key)))
    return out


def test_random_is_deterministic_and_in_range():
    reqs = requests()
    first = RandomBackend(seed=7).generate(reqs)
    second = RandomBackend(seed=7).generate(list(reversed(reqs)))[::-1]
    assert [r.text for r in first] == [r.text for r in second]  # per-key RNG: order does not matter
    assert [r.text for r in first] != [r.text for r in RandomBackend(seed=8).generate(reqs)]
    for request, result in zip(reqs, first):
        assert result.key == request.key and not result.error
        letters = [chr(65 + i) for i in range(len(request.options))]
        if request.answer_type in ("single_choice", "yes_no"):
            assert result.text in letters
        elif request.answer_type == "multi_choice":
            chosen = result.text.split(", ")
            assert chosen and set(chosen) <= set(letters) and chosen == sorted(chosen)
            assert len(set(chosen)) == len(chosen)
        elif request.answer_type == "box":
            x0, y0, x1, y1 = (int(v) for v in BOX.match(result.text).groups())
            width, height = request.image_size
            assert 0 <= x0 <= x1 <= width and 0 <= y0 <= y1 <= height
        else:
            assert result.text in request.options
    singles = {r.text for q, r in zip(reqs, first) if q.answer_type == "single_choice"}
    assert len(singles) > 1


def test_random_is_stable_across_processes():
    reqs = requests(10)
    here = [r.text for r in RandomBackend(seed=3).generate(reqs)]
    code = ("import json; from tests.workers.backends.test_baselines import requests;"
            "from workers.backends.baselines import RandomBackend;"
            "print(json.dumps([r.text for r in RandomBackend(seed=3).generate(requests(10))]))")
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == here


def test_random_edge_cases():
    backend = RandomBackend()
    no_opts = backend.generate([
        GenerationRequest(key=1, prompt="", image=None, answer_type="short_text"),
        GenerationRequest(key=2, prompt="", image=None, answer_type="box"),
        GenerationRequest(key=3, prompt="", image=None, answer_type="yes_no"),
        GenerationRequest(key=4, prompt="", image=None, answer_type="essay"),
    ])
    assert no_opts[0].text == "unknown"
    assert all(0.0 <= float(v) <= 1.0 for v in BOX.match(no_opts[1].text).groups())
    assert no_opts[2].text in ("A", "B")
    assert no_opts[3].error and "essay" in no_opts[3].error and no_opts[3].text == ""
    with pytest.raises(BackendError, match="seed"):
        RandomBackend(seed="x")


TABLE = {
    "XR-CHEST": {"text": "Pleural effusion", "letter": "B", "box": [0.1, 0.2, 0.5, 0.6]},
    "CT-HEAD": {"text": None, "letter": "C", "box": None},
}


def test_prior_follows_the_table_text_when_options_are_permuted():
    backend = load_backend("prior", {"table": TABLE}, cache_size=0)
    perms = [("normal", "pleural effusion", "pneumonia"), ("pleural effusion", "normal", "pneumonia"),
             ("pneumonia", "normal", "mass", " Pleural  Effusion ")]
    answers = [backend.generate([GenerationRequest(key=i, prompt="", image=None, options=opts,
                                                   category="XR-CHEST")])[0].text for i, opts in enumerate(perms)]
    assert answers == ["B", "A", "D"]


def test_prior_falls_back_to_letter_then_default():
    backend = PriorBackend(table=TABLE, default_letter="D")
    req = GenerationRequest(key=1, prompt="", image=None, options=("a", "b", "c", "d"), category="XR-CHEST")
    assert backend.generate([req])[0].text == "B"  # text not shown -> table letter
    ct = GenerationRequest(key=2, prompt="", image=None, options=("a", "b", "c"), category="CT-HEAD")
    assert backend.generate([ct])[0].text == "C"
    short = GenerationRequest(key=3, prompt="", image=None, options=("a", "b"), category="CT-HEAD")
    assert backend.generate([short])[0].text == "D"  # table letter not among the shown options
    other = GenerationRequest(key=4, prompt="", image=None, options=("a", "b"), category="MR-KNEE")
    assert backend.generate([other])[0].text == "D"


def test_prior_box_and_text():
    backend = PriorBackend(table=TABLE)
    box = GenerationRequest(key=1, prompt="", image=None, answer_type="box", category="XR-CHEST",
                            image_size=(200, 100))
    no_size = GenerationRequest(key=2, prompt="", image=None, answer_type="box", category="XR-CHEST")
    no_box = GenerationRequest(key=3, prompt="", image=None, answer_type="box", category="CT-HEAD",
                               image_size=(64, 32))
    text = GenerationRequest(key=4, prompt="", image=None, answer_type="short_text", category="XR-CHEST")
    unknown = GenerationRequest(key=5, prompt="", image=None, answer_type="short_text", category="CT-HEAD")
    out = [r.text for r in backend.generate([box, no_size, no_box, text, unknown])]
    assert out == ["[20, 20, 100, 60]", "[0.1, 0.2, 0.5, 0.6]", "[0, 0, 64, 32]", "Pleural effusion", "unknown"]


@pytest.mark.parametrize("table", [[], {"X": []}, {"X": {"txt": "a"}}, {"X": {"letter": "b"}}, {"X": {"box": [1]}}])
def test_prior_rejects_bad_tables(table):
    with pytest.raises(BackendError, match="prior"):
        PriorBackend(table=table)


def test_null_answers_instantly():
    kinds = ["single_choice", "yes_no", "multi_choice", "box", "short_text"]
    reqs = [GenerationRequest(key=i, prompt="", image=None, answer_type=k) for i, k in enumerate(kinds)]
    results = NullBackend().generate(reqs)
    assert [r.text for r in results] == ["A", "A", "A", "[0, 0, 1, 1]", "unknown"]
    assert all(r.latency_ms == 0.0 and not r.error for r in results)
    assert NullBackend().describe()["backend"] == "null"
    json.dumps(PriorBackend(table=TABLE).describe())
