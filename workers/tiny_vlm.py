"""A tiny, randomly initialised LLaVA built entirely offline, for tests and throughput benchmarks.

``build_tiny_vlm(path)`` writes a directory that ``AutoProcessor.from_pretrained(path, local_files_only=True)``
and ``AutoModelForImageTextToText.from_pretrained(path, local_files_only=True)`` load like any real
checkpoint: LLaVA = tiny CLIP vision tower + tiny Llama, a byte-level BPE tokenizer trained locally with
``tokenizers`` on a built-in radiology corpus, a Jinja chat template and the PIL (torchvision-free)
LLaVA image processor. Its answers are noise; its shapes, batching and I/O are real.

    python -m workers.tiny_vlm /tmp/tiny-vlm --hidden-size 512 --num-layers 8
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TINY_VLM_DEFAULTS: dict[str, int] = {
    "hidden_size": 64,
    "num_layers": 2,
    "num_heads": 4,
    "vision_hidden_size": 32,
    "vision_layers": 2,
    "image_size": 32,
    "patch_size": 8,
    "seed": 0,
}

PAD, BOS, EOS, UNK, IMAGE = "<pad>", "<s>", "</s>", "<unk>", "<image>"
SPECIAL_TOKENS = [PAD, BOS, EOS, UNK, IMAGE]  # ids 0..4, in this order
BPE_VOCAB_SIZE = 600
BUILD_INFO_FILE = "tiny_vlm.json"

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- message['role'] | upper -}}{{- ': ' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{- '<image>\\n' -}}"
    "{%- elif item['type'] == 'text' -%}{{- item['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}{{- '\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'ASSISTANT:' -}}{%- endif -%}"
)

_WORDS_TEXT = """
the a an of in on at to and or with without is are was be this that which what where how many most likely
image images scan study view views patient finding findings answer question options option choose select best
letter letters only one all apply following true false yes no normal abnormal unknown left right bilateral upper
lower middle lobe lobes lung lungs chest thorax heart cardiac mediastinum mediastinal pleural effusion pneumothorax
pneumonia consolidation opacity opacities atelectasis edema nodule nodules mass masses lesion lesions fracture
fractures cardiomegaly emphysema fibrosis infiltrate calcification tube line catheter device pacemaker hernia
brain head skull abdomen abdominal liver kidney kidneys spleen pancreas bowel bladder spine vertebra bone bones
knee hip shoulder hand wrist ankle foot pelvis breast thyroid tumor cyst stone hemorrhage infarct stroke
x-ray xray radiograph radiography ct mri ultrasound pet mammography dermoscopy pathology histology fundus oct
axial sagittal coronal frontal lateral pa ap contrast enhanced t1 t2 flair dwi window modality organ plane
box bounding coordinates region located location draw give provide pixel pixels width height size
short text describe diagnosis impression report severity mild moderate severe small large present absent
"""
_WORDS = _WORDS_TEXT.split()
_PROMPTS = [
    "What is the most likely finding in this chest x-ray?",
    "Options:\nA. pneumonia\nB. normal\nC. pleural effusion\nD. cardiomegaly",
    "Answer with the letter of the correct option only.",
    "Is there a fracture in this image? Answer yes or no.",
    "Select all options that apply (e.g. A, C).",
    "Give the bounding box of the lesion as [x0, y0, x1, y1] in pixels.",
    "Which imaging modality was used: CT, MRI, X-ray or ultrasound?",
    "Which organ is shown? Answer in a few words.",
    "[0, 0, 1, 1] [12, 34, 56, 78] (A) B) C: D; E, F. 'G' \"H\" 100% 3.5 mm 2 cm - / ? !",
]


def training_corpus() -> list[str]:
    """The built-in text the tokenizer is trained on (deterministic)."""
    letters = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    corpus = list(_PROMPTS)
    corpus += [" ".join(_WORDS[i:i + 12]) for i in range(0, len(_WORDS), 12)]
    corpus += [" ".join(w.capitalize() for w in _WORDS[i:i + 12]) for i in range(0, len(_WORDS), 12)]
    corpus += [" ".join(letters), ", ".join(letters), " ".join(f"{c}." for c in letters), " ".join(letters).lower()]
    corpus += [" ".join(str(n) for n in range(0, 1001, 7)), "0 1 2 3 4 5 6 7 8 9",
               ". , ; : ! ? ( ) [ ] { } - + = / % ' \""]
    corpus += ["USER: ASSISTANT: SYSTEM:"]
    return corpus


def build_tokenizer(chat_template: str = CHAT_TEMPLATE) -> Any:
    """Train a byte-level BPE tokenizer on :func:`training_corpus` and wrap it for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=BPE_VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_corpus(), trainer)
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B",
                                                       special_tokens=[(BOS, SPECIAL_TOKENS.index(BOS))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS, unk_token=UNK, pad_token=PAD,
                                   extra_special_tokens={"image_token": IMAGE}, chat_template=chat_template)


def _validate(cfg: dict[str, int]) -> None:
    for key, value in cfg.items():
        if isinstance(value, bool) or not isinstance(value, int) or (value < 1 and key != "seed"):
            raise ValueError(f"{key} must be a positive integer, got {value!r}")
    if cfg["hidden_size"] % cfg["num_heads"]:
        raise ValueError("hidden_size must be divisible by num_heads")
    if cfg["image_size"] % cfg["patch_size"]:
        raise ValueError("image_size must be divisible by patch_size")


def _vision_heads(vision_hidden_size: int, num_heads: int) -> int:
    return next(h for h in (num_heads, 4, 2, 1) if vision_hidden_size % h == 0)


def build_tiny_vlm(path: str | Path, *, hidden_size: int = 64, num_layers: int = 2, num_heads: int = 4,
                   vision_hidden_size: int = 32, vision_layers: int = 2, image_size: int = 32, patch_size: int = 8,
                   seed: int = 0) -> Path:
    """Build and save a random tiny LLaVA (model + processor, safetensors) into ``path``; return the path.

    Deterministic: the same arguments give byte-identical tensors. The global torch RNG is left untouched.
    """
    cfg = {"hidden_size": hidden_size, "num_layers": num_layers, "num_heads": num_heads,
           "vision_hidden_size": vision_hidden_size, "vision_layers": vision_layers, "image_size": image_size,
           "patch_size": patch_size, "seed": seed}
    _validate(cfg)
    import torch
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    image_processor = LlavaImageProcessorPil(size={"shortest_edge": image_size},
                                             crop_size={"height": image_size, "width": image_size})
    # CLIP adds a CLS embedding (+1); the "default" feature strategy drops it again.
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=patch_size,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=CHAT_TEMPLATE, image_token=IMAGE)
    vision = CLIPVisionConfig(hidden_size=vision_hidden_size, intermediate_size=4 * vision_hidden_size,
                              num_hidden_layers=vision_layers,
                              num_attention_heads=_vision_heads(vision_hidden_size, num_heads),
                              image_size=image_size, patch_size=patch_size, projection_dim=vision_hidden_size)
    n_image_tokens = (image_size // patch_size) ** 2
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=4 * hidden_size,
                       num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_heads,
                       max_position_embeddings=max(2048, 2 * n_image_tokens + 1024), tie_word_embeddings=False,
                       bos_token_id=ids[BOS], eos_token_id=ids[EOS], pad_token_id=ids[PAD])
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_id=ids[IMAGE], vision_feature_layer=-1,
                         vision_feature_select_strategy="default", projector_hidden_act="gelu")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config)
    model.eval()
    gen = model.generation_config
    gen.bos_token_id, gen.eos_token_id, gen.pad_token_id = ids[BOS], ids[EOS], ids[PAD]
    gen.do_sample = False
    model.save_pretrained(out)
    processor.save_pretrained(out)
    info = {"builder": "workers.tiny_vlm", **cfg, "vocab_size": len(tokenizer), "image_tokens": n_image_tokens}
    (out / BUILD_INFO_FILE).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return out


def describe_tiny_vlm(path: str | Path) -> dict[str, Any]:
    """Facts about a built tiny VLM (parameter count from the safetensors headers; torch not needed)."""
    from safetensors import safe_open

    root = Path(path)
    parameters = 0
    tensors = 0
    for file in sorted(root.glob("*.safetensors")):
        with safe_open(str(file), framework="numpy") as handle:
            names = handle.keys()
            for name in names:
                shape = handle.get_slice(name).get_shape()
                count = 1
                for dim in shape:
                    count *= int(dim)
                parameters += count
                tensors += 1
    info_file = root / BUILD_INFO_FILE
    info = json.loads(info_file.read_text()) if info_file.is_file() else {}
    config = json.loads((root / "config.json").read_text())
    return {**info, "path": str(root), "parameters": parameters, "tensors": tensors,
            "model_type": config.get("model_type"), "architectures": config.get("architectures")}


def main(argv: list[str] | None = None) -> None:
    """CLI: build a tiny VLM and print its description as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    for key, value in TINY_VLM_DEFAULTS.items():
        parser.add_argument("--" + key.replace("_", "-"), type=int, default=value)
    args = vars(parser.parse_args(argv))
    path = build_tiny_vlm(args.pop("path"), **args)
    print(json.dumps(describe_tiny_vlm(path), indent=2))


if __name__ == "__main__":  # pragma: no cover
    main()
