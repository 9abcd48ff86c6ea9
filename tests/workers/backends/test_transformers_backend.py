"""The transformers backend on the tiny VLM (LLaVA) and a tiny Idefics3, offline on CPU."""
from __future__ import annotations

import json

import pytest
from PIL import Image

from tests.workers.backends.support import build_tiny_idefics3, make_image
from workers.backends import BackendError, GenerationRequest, TransformersBackend, clear_backend_cache, load_backend

PROMPTS = [
    "Is there a fracture? Answer yes or no.",
    ("What is the most likely finding in this chest x-ray?\nOptions:\nA. pneumonia\nB. normal\nC. pleural effusion\n"
     "D. cardiomegaly\nAnswer with the letter of the correct option only."),
    "Which organ?",
    "Give the bounding box of the lesion as [x0, y0, x1, y1] in pixels. The image is 64 by 64 pixels wide.",
    "Select all options that apply (e.g. A, C).",
]


def image_requests() -> list[GenerationRequest]:
    return [GenerationRequest(key=100 + i, prompt=p, image=make_image(i)) for i, p in enumerate(PROMPTS)]


def test_loads_through_auto_classes_and_describes(tiny_vlm_path):
    clear_backend_cache()
    params = {"path": str(tiny_vlm_path), "max_new_tokens": 4}
    backend = load_backend("transformers", params)
    assert load_backend("transformers", dict(params)) is backend
    facts = backend.describe()
    json.dumps(facts)
    assert facts["backend"] == "transformers"
    assert facts["model_class"] == "LlavaForConditionalGeneration"
    assert facts["processor_class"] == "LlavaProcessor"
    assert facts["image_processor_class"] == "LlavaImageProcessorPil"
    assert facts["device"] == "cpu" and facts["dtype"] == "float32"
    assert facts["parameters"] > 0 and "model.safetensors" in facts["weight_files"]
    assert backend.processor.tokenizer.padding_side == "left"
    clear_backend_cache()
    assert backend.model is None
    with pytest.raises(BackendError, match="closed"):
        backend.generate(image_requests()[:1])


def test_batched_equals_alone_with_left_padding(tiny_backend):
    reqs = image_requests()
    batched = tiny_backend.generate(reqs)
    alone = [tiny_backend.generate([r])[0] for r in reqs]
    assert [r.key for r in batched] == [r.key for r in reqs]
    assert all(not r.error for r in batched + alone)
    assert [r.text for r in batched] == [r.text for r in alone]
    assert [r.tokens_in for r in batched] == [r.tokens_in for r in alone]
    assert [r.tokens_out for r in batched] == [r.tokens_out for r in alone]
    lengths = [r.tokens_in for r in batched]
    assert len(set(lengths)) == len(lengths)  # different lengths, so padding really happened
    assert lengths[1] > lengths[2]
    assert all(16 < n for n in lengths)  # 16 image tokens + the prompt
    assert all(1 <= r.tokens_out <= 8 for r in batched)
    assert all(r.latency_ms > 0 for r in batched)
    assert len({r.text for r in batched}) > 1  # the image/prompt matters


def test_chunks_of_batch_size_give_the_same_answers(tiny_vlm_path, tiny_backend):
    small = TransformersBackend(path=str(tiny_vlm_path), max_new_tokens=8, batch_size=2)
    try:
        reqs = image_requests()
        assert [r.text for r in small.generate(reqs)] == [r.text for r in tiny_backend.generate(reqs)]
    finally:
        small.close()


def test_broken_images_fail_alone(tiny_backend):
    good = image_requests()
    broken = [
        GenerationRequest(key=1, prompt="empty", image=Image.new("RGB", (0, 0))),
        GenerationRequest(key=2, prompt="not an image", image="not-an-image"),  # type: ignore[arg-type]
    ]
    text_only = GenerationRequest(key=3, prompt="No image here. Answer yes or no.", image=None)
    gray = GenerationRequest(key=4, prompt="gray", image=Image.new("L", (40, 50), 90))
    mixed = [good[0], broken[0], text_only, good[1], broken[1], gray, good[2]]
    results = tiny_backend.generate(mixed)
    assert [r.key for r in results] == [r.key for r in mixed]
    by_key = {r.key: r for r in results}
    assert "empty" in by_key[1].error and by_key[1].text == ""
    assert "PIL" in by_key[2].error and by_key[2].text == ""
    for request in (good[0], text_only, good[1], gray, good[2]):
        result = by_key[request.key]
        assert not result.error
        assert result.text == tiny_backend.generate([request])[0].text


def test_system_prompt_enters_the_chat(tiny_vlm_path):
    backend = TransformersBackend(path=str(tiny_vlm_path), max_new_tokens=2, system_prompt="You are a radiologist.")
    try:
        text = backend._prompt_text(image_requests()[0])
        assert text.startswith("SYSTEM: You are a radiologist.\nUSER: <image>\n")
        assert text.endswith("ASSISTANT:")
        assert not backend.generate(image_requests()[:2])[0].error
    finally:
        backend.close()


def test_configuration_errors(tmp_path, tiny_vlm_path):
    with pytest.raises(BackendError, match="does not exist"):
        TransformersBackend(path=str(tmp_path / "missing"))
    with pytest.raises(BackendError, match="config.json"):
        TransformersBackend(path=str(tmp_path))
    (tmp_path / "config.json").write_text('{"model_type": "llava"}')
    with pytest.raises(BackendError, match="cannot load"):
        TransformersBackend(path=str(tmp_path))
    with pytest.raises(BackendError, match="dtype"):
        TransformersBackend(path=str(tiny_vlm_path), dtype="int3")
    with pytest.raises(BackendError, match="batch_size"):
        TransformersBackend(path=str(tiny_vlm_path), batch_size=0)
    with pytest.raises(BackendError, match="top_k"):
        TransformersBackend(path=str(tiny_vlm_path), top_k=5)


def test_idefics3_style_model_without_name_branches(tmp_path):
    backend = TransformersBackend(path=str(build_tiny_idefics3(tmp_path / "idefics3")), max_new_tokens=6)
    try:
        assert backend.describe()["model_class"] == "Idefics3ForConditionalGeneration"
        reqs = [GenerationRequest(key=i, prompt=p, image=make_image(i, size)) for i, (p, size)
                in enumerate(zip(PROMPTS, [(64, 48), (20, 90), (64, 64), (32, 32), (100, 30)]))]
        reqs.append(GenerationRequest(key=9, prompt="text only", image=None))
        reqs.append(GenerationRequest(key=10, prompt="broken", image=Image.new("RGB", (5, 0))))
        batched = backend.generate(reqs)
        alone = [backend.generate([r])[0] for r in reqs]
        assert [r.text for r in batched] == [r.text for r in alone]
        assert all(not r.error for r in batched[:-1]) and "empty" in batched[-1].error
        assert len({r.tokens_in for r in batched[:5]}) > 1  # image splitting: tokens per image vary
    finally:
        backend.close()


def test_processor_failure_isolated_to_its_request(tiny_backend, monkeypatch):
    """A request the processor itself rejects (not caught by the image check) fails alone."""
    real_encode = tiny_backend._encode

    def picky_encode(texts, images):
        if any("POISON" in t for t in texts):
            raise ValueError("processor rejected the input")
        return real_encode(texts, images)

    monkeypatch.setattr(tiny_backend, "_encode", picky_encode)
    reqs = image_requests()[:3]
    reqs.insert(1, GenerationRequest(key=7, prompt="POISON", image=make_image(7)))
    results = tiny_backend.generate(reqs)
    assert "processor rejected" in results[1].error and results[1].text == ""
    monkeypatch.undo()
    expected = tiny_backend.generate([reqs[0], reqs[2], reqs[3]])
    assert [r.text for r in (results[0], results[2], results[3])] == [r.text for r in expected]


def test_generation_failure_isolated_to_its_request(tiny_backend, monkeypatch):
    """If generate() fails for a batch, every request is retried alone; only the culprit fails."""
    real_generate = tiny_backend._generate_encoded
    poison_len = tiny_backend._encode([tiny_backend._prompt_text(
        GenerationRequest(key=0, prompt="POISON " * 9, image=make_image(0)))], [make_image(0)])["input_ids"].shape[1]

    def fragile(encoded):
        lengths = encoded["attention_mask"].sum(dim=1).tolist()
        if poison_len in lengths:
            raise RuntimeError("CUDA out of memory (simulated)")
        return real_generate(encoded)

    monkeypatch.setattr(tiny_backend, "_generate_encoded", fragile)
    reqs = image_requests()[:2] + [GenerationRequest(key=8, prompt="POISON " * 9, image=make_image(8))]
    results = tiny_backend.generate(reqs)
    assert "generation failed" in results[2].error and "simulated" in results[2].error
    assert all(not r.error for r in results[:2])
