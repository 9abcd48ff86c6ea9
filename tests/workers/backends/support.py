"""Helpers shared by the backend tests: deterministic images and a tiny Idefics3 checkpoint."""
from __future__ import annotations

from pathlib import Path

from PIL import Image


def make_image(seed: int, size: tuple[int, int] = (64, 64)) -> Image.Image:
    """A deterministic RGB test image with some structure."""
    image = Image.new("RGB", size, ((seed * 53) % 256, (seed * 97) % 256, (seed * 31) % 256))
    for x in range(0, size[0], 8):
        for y in range(0, size[1], 8):
            if (x // 8 + y // 8 + seed) % 3 == 0:
                image.putpixel((x, y), (255, 255, 255))
    return image


def build_tiny_idefics3(path: Path, seed: int = 0) -> Path:
    """A random Idefics3 (SigLIP-style vision + pixel shuffle + Llama) saved like a real checkpoint.

    Shows that the transformers backend needs no model-name branches: image splitting gives each image
    its own number of tokens, and the processor wants nested image lists.
    """
    import torch
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3Processor,
        Idefics3VisionConfig,
        LlamaConfig,
    )
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    from workers.tiny_vlm import CHAT_TEMPLATE, build_tokenizer

    tokenizer = build_tokenizer()
    extra = ["<fake_token_around_image>", "<end_of_utterance>", "<global-img>"]
    extra += [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
    tokenizer.add_special_tokens({"additional_special_tokens": extra})
    image_processor = Idefics3ImageProcessorPil(size={"longest_edge": 64}, max_image_size={"longest_edge": 32})
    # image_seq_len = (image_size / patch_size)^2 / scale_factor^2 = (32 / 8)^2 / 4
    processor = Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=4,
                                  chat_template=CHAT_TEMPLATE)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in ("<pad>", "<s>", "</s>", "<image>")}
    vision = Idefics3VisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                                  image_size=32, patch_size=8)
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=4, bos_token_id=ids["<s>"],
                       eos_token_id=ids["</s>"], pad_token_id=ids["<pad>"])
    config = Idefics3Config(vision_config=vision, text_config=text, image_token_id=ids["<image>"], scale_factor=2,
                            pad_token_id=ids["<pad>"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Idefics3ForConditionalGeneration(config)
    model.generation_config.pad_token_id = ids["<pad>"]
    model.generation_config.eos_token_id = ids["</s>"]
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path
