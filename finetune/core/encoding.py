"""Turning examples into token ids and loss masks for a transformers VLM, exactly as evaluation prompts it.

Each turn's prompt is rendered with the processor's own chat template (a user message: the image on the
first turn, then the prompt; the generation prompt after it), the same call the `transformers` backend
makes at evaluation time, so a one-turn example starts with exactly the tokens the model will see. The
target is what the template puts after the generation prompt for an assistant message, then the EOS
token; only target tokens carry a loss. The first piece is encoded by the processor with the image (so
the image placeholder is expanded to the model's number of image tokens); the rest by the tokenizer alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .recipes import Example

IGNORE = -100


@dataclass(frozen=True)
class Encoded:
    input_ids: tuple[int, ...]
    labels: tuple[int, ...]
    image: str
    source: str

    @property
    def tokens(self) -> int:
        return len(self.input_ids)

    @property
    def supervised(self) -> int:
        return sum(1 for v in self.labels if v != IGNORE)


def _user(prompt: str, with_image: bool) -> dict:
    content: list[dict] = [{"type": "image"}] if with_image else []
    return {"role": "user", "content": content + [{"type": "text", "text": prompt}]}


def _assistant(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def conversation_pieces(processor: Any, example: Example, system_prompt: str | None = None) -> list[tuple[str, bool]]:
    """(text, supervised) pieces whose concatenation is the whole conversation, rendered by the chat template."""
    messages: list[dict] = []
    if system_prompt:
        messages.append({"role": "system", "content": [{"type": "text", "text": system_prompt}]})
    pieces: list[tuple[str, bool]] = []
    shown = ""
    for n, (prompt, target) in enumerate(example.turns):
        messages.append(_user(prompt, with_image=n == 0))
        prefix = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        if not prefix.startswith(shown):  # a template that rewrites earlier turns: fall back to plain joins
            prefix = shown + prefix
        pieces.append((prefix[len(shown):], False))
        messages[-1:] = [messages[-1], _assistant(target)]
        full = processor.apply_chat_template(messages, add_generation_prompt=False, tokenize=False)
        answer = full[len(prefix):] if full.startswith(prefix) and len(full) > len(prefix) else " " + target
        pieces.append((answer, True))
        shown = prefix + answer
    return pieces


class ExampleEncoder:
    """Encodes examples for one processor; images are opened here only to count their tokens."""

    def __init__(self, processor: Any, *, max_length: int = 1024, system_prompt: str | None = None) -> None:
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.max_length = max_length
        self.system_prompt = system_prompt
        eos = self.tokenizer.eos_token_id
        self.eos = [] if eos is None else [int(eos)]
        self._tokens_per_size: dict[tuple[int, int], int | None] = {}

    def _slow_first_piece(self, text: str, image: Any) -> list[int]:
        return self.processor(text=[text], images=[[image]], return_tensors="pt")["input_ids"][0].tolist()

    def _first_piece(self, text: str, image_path: str) -> list[int]:
        """The first piece's ids, with the image placeholder expanded as the processor expands it.

        Running the processor on every example (image decoding and resizing included) only to count image
        tokens is most of the encoding time, so the count is learned once per image size: the placeholder
        repeated that many times and tokenized gives the same ids - checked against the processor on the first
        example of each size; processors that expand differently (row/column markers, ...) keep the slow path."""
        from PIL import Image

        token = getattr(self.processor, "image_token", None)
        with Image.open(image_path) as im:
            size = im.size
            if not token or text.count(token) != 1:
                return self._slow_first_piece(text, im.convert("RGB"))
            if size not in self._tokens_per_size:
                slow = self._slow_first_piece(text, im.convert("RGB"))
                token_id = self.tokenizer.convert_tokens_to_ids(token)
                count = slow.count(token_id)
                fast = self.tokenizer(text.replace(token, token * count))["input_ids"] if count else None
                self._tokens_per_size[size] = count if fast == slow else None
                return slow
            count = self._tokens_per_size[size]
            if count is None:
                return self._slow_first_piece(text, im.convert("RGB"))
        return self.tokenizer(text.replace(token, token * count))["input_ids"]

    def encode(self, example: Example) -> Encoded | None:
        """Ids and labels; turns that do not fit in `max_length` are dropped (None when not even one fits)."""
        ids: list[int] = []
        labels: list[int] = []
        pieces = conversation_pieces(self.processor, example, self.system_prompt)
        for n in range(0, len(pieces), 2):
            (prompt, _), (answer, _) = pieces[n], pieces[n + 1]
            if n == 0:
                p_ids = self._first_piece(prompt, example.image)
            else:
                p_ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
            a_ids = self.tokenizer(answer, add_special_tokens=False)["input_ids"] + self.eos
            if len(ids) + len(p_ids) + len(a_ids) > self.max_length:
                break
            ids += p_ids + a_ids
            labels += [IGNORE] * len(p_ids) + a_ids
        if not labels or all(v == IGNORE for v in labels):
            return None
        return Encoded(tuple(ids), tuple(labels), example.image, example.source)
