"""The offline tiny VLM: loadable through the Auto classes, deterministic, scalable."""
from __future__ import annotations

import hashlib
import json
import time

import pytest

from tests.workers.backends.support import make_image
from workers.backends import GenerationRequest, TransformersBackend
from workers.tiny_vlm import TINY_VLM_DEFAULTS, build_tiny_vlm, describe_tiny_vlm


def tensor_hashes(path) -> dict[str, str]:
    from safetensors.numpy import load_file

    hashes = {}
    for file in sorted(path.glob("*.safetensors")):
        for name, array in load_file(str(file)).items():
            hashes[name] = hashlib.sha256(array.tobytes() + str(array.shape).encode()).hexdigest()
    return hashes


def test_files_and_description(tiny_vlm_path):
    names = {p.name for p in tiny_vlm_path.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "processor_config.json"} <= names
    assert not list(tiny_vlm_path.glob("*.bin"))
    facts = describe_tiny_vlm(tiny_vlm_path)
    assert facts["model_type"] == "llava" and facts["hidden_size"] == TINY_VLM_DEFAULTS["hidden_size"]
    assert 50_000 < facts["parameters"] < 2_000_000
    assert facts["vocab_size"] <= 1000
    json.dumps(facts)


def test_tokenizer_and_template(tiny_backend):
    tokenizer = tiny_backend.processor.tokenizer
    ids = tokenizer("<image>", add_special_tokens=False)["input_ids"]
    assert ids == [tokenizer.convert_tokens_to_ids("<image>")]
    text = "Answer: B, [12, 34, 56, 78] pleural effusion?"
    assert tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True) == text
    assert tokenizer.unk_token_id not in tokenizer("ünïcode ✓ 肺")["input_ids"]  # byte-level: no unknowns


def test_build_is_deterministic(tmp_path, tiny_vlm_path):
    again = build_tiny_vlm(tmp_path / "again")
    assert tensor_hashes(again) == tensor_hashes(tiny_vlm_path)
    assert (again / "tokenizer.json").read_bytes() == (tiny_vlm_path / "tokenizer.json").read_bytes()
    other = build_tiny_vlm(tmp_path / "other", seed=1)
    assert tensor_hashes(other) != tensor_hashes(tiny_vlm_path)


def test_generation_is_fast(tiny_backend):
    request = GenerationRequest(key=1, prompt="Is there a fracture? Answer yes or no.", image=make_image(3))
    tiny_backend.generate([request])  # warm-up
    start = time.perf_counter()
    result = tiny_backend.generate([request])[0]
    assert not result.error and result.tokens_out == 8
    assert time.perf_counter() - start < 1.0


def test_bigger_configuration_builds_and_generates(tmp_path):
    path = build_tiny_vlm(tmp_path / "bigger", hidden_size=128, num_layers=3, num_heads=8, vision_hidden_size=48,
                          vision_layers=1, image_size=56, patch_size=14, seed=2)
    facts = describe_tiny_vlm(path)
    assert facts["image_tokens"] == 16 and facts["num_layers"] == 3
    backend = TransformersBackend(path=str(path), max_new_tokens=3)
    try:
        assert backend.describe()["parameters"] == facts["parameters"]
        results = backend.generate([GenerationRequest(key=i, prompt="Which organ?" * (i + 1),
                                                      image=make_image(i, (90, 70))) for i in range(2)])
        assert all(not r.error and r.tokens_out == 3 for r in results)
    finally:
        backend.close()


@pytest.mark.parametrize("kwargs", [{"hidden_size": 30, "num_heads": 4}, {"image_size": 30, "patch_size": 8},
                                    {"num_layers": 0}])
def test_bad_configurations_refused(tmp_path, kwargs):
    with pytest.raises(ValueError):
        build_tiny_vlm(tmp_path / "bad", **kwargs)
