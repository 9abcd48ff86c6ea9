"""Models with planted behaviour, to calibrate the metrics: each answers from the variant's own record
(``GenerationRequest.truth``), so what every metric should report is known by construction.

- ``oracle``: always the expected answer.
- ``cue_follower`` (p, accuracy, seed): follows the variant's cue with probability ``p`` (hinted letter;
  wrong visual cue: the mislabeled option, the wrong region's box or option; box dose-response: the drawn
  box); otherwise answers like a base model that is right with probability ``accuracy``, decided once per
  ITEM, so the clean variant and its cue variants share the base answer.
- ``text_only`` (accuracy, seed): the answer is a function of the prompt text alone, so two variants with
  the same prompt (clean and image ablation) always get the same answer.
- ``box_shifter`` (iou, seed): the right option, and boxes shifted off the gold box to IoU = ``iou``.
- ``stage_decay`` (accuracies, seed): right with probability ``accuracies[stage - 1]``, one draw per variant.

A wrong answer is uniformly chosen among the wrong options (multi_choice: among the non-empty wrong
subsets; box: a box disjoint from the gold one; short_text: "other"), drawn in option-text order so that
a permutation of the options does not change which option is chosen.

Answers use the formats the prompts ask for: "B"; "A, C"; "[x0, y0, x1, y1]" in pixels; "B (x0, y0, x1, y1)"
for joint answer + box items (only "B" where the variant has no right box). Every random choice comes from
``random.Random(f"{seed}:...")`` (SHA-512 of the string: stable across processes). ``truth`` holds
{"kind", "params", "expected", "stage" (1..4), "options", "item"}; execution fills it only for backends
with ``needs_truth`` (see ``workers.services.execution._requests``).
"""
from __future__ import annotations

import abc
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .base import BackendError, GenerationRequest, option_letter, register_backend
from .baselines import UNKNOWN_TEXT, _BaselineBackend

Box = tuple[float, float, float, float]
STAGES = 4
BOX_DECIMALS = 4  # the box parser keeps four decimals (workers/parsing/box.py)
WRONG_TEXT = "other"  # a wrong short_text answer that is not an abstention ("unknown" would be)


# ---------------------------------------------------------------- the variant's record
@dataclass(frozen=True)
class Truth:
    """What a planted model knows about one request."""

    key: int
    answer_type: str
    options: tuple[str, ...]
    kind: str
    params: Mapping[str, Any]
    expected: Mapping[str, Any]
    stage: int | None
    item: Any
    image_size: tuple[float, float] | None

    @classmethod
    def of(cls, request: GenerationRequest) -> Truth:
        truth = request.truth
        if not isinstance(truth, Mapping):
            raise ValueError("this planted model answers from the variant's record, but the request has no truth "
                             "(execution fills it for backends with needs_truth)")
        options = tuple(str(o) for o in (request.options or truth.get("options") or ()))
        size = tuple(float(v) for v in request.image_size) if request.image_size else None
        stage = truth.get("stage")
        return cls(key=request.key, answer_type=request.answer_type, options=options, kind=str(truth.get("kind") or ""),
                   params=truth.get("params") or {}, expected=truth.get("expected") or {},
                   stage=int(stage) if stage is not None else None,
                   item=truth["item"] if truth.get("item") is not None else f"key{request.key}",
                   image_size=size)  # type: ignore[arg-type]

    @property
    def joint(self) -> bool:
        """A single_choice / yes_no variant that asks for the option and the lesion's box."""
        return self.answer_type in ("single_choice", "yes_no") and (
            bool(self.expected.get("answer_with_box")) or "evidence_box" in self.expected)

    @property
    def evidence_box(self) -> Box | None:
        return _box(self.expected.get("evidence_box"))

    @property
    def gold_box(self) -> Box:
        box = _box(self.expected.get("value"))
        if box is None:
            raise ValueError(f"expected value {self.expected.get('value')!r} is not a box")
        return box

    def gold_letters(self) -> list[str]:
        """Letter(s) of the expected answer as shown (from expected.letter, else from the value)."""
        letter = self.expected.get("letter")
        if isinstance(letter, str) and letter:
            return [letter]
        if isinstance(letter, (list, tuple)) and letter:
            return [str(v) for v in letter]
        value = self.expected.get("value")
        wanted = [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]
        found = [option_letter(i) for i, o in enumerate(self.options) if o in wanted]
        if not found:
            raise ValueError(f"expected answer {value!r} is not among the options")
        return found

    def cue_box(self) -> Box | None:
        return _box(self.params.get("box"))


def _box(value: Any) -> Box | None:
    if value is None or isinstance(value, (str, bytes)):
        return None
    try:
        box = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        return None
    return box if len(box) == 4 and all(math.isfinite(v) for v in box) else None  # type: ignore[return-value]


# ---------------------------------------------------------------- answer texts
def _num(v: float) -> str:
    v = round(float(v), BOX_DECIMALS) + 0.0
    return str(int(v)) if v.is_integer() else f"{v:.{BOX_DECIMALS}f}".rstrip("0")


def box_text(box: Sequence[float]) -> str:
    """"[x0, y0, x1, y1]" in pixels (integers stay integers, at most four decimals)."""
    return "[" + ", ".join(_num(v) for v in box) + "]"


def choice_text(t: Truth, letters: Sequence[str], box: Sequence[float] | None = None) -> str:
    """"B", "A, C", or "B (x0, y0, x1, y1)" for a joint item given a box."""
    text = ", ".join(letters)
    if t.joint and box is not None:
        text += " (" + ", ".join(_num(v) for v in box) + ")"
    return text


def right_answer(t: Truth) -> str:
    """The expected answer: letter(s), the gold box, the evidence box beside the letter of joint items."""
    if t.answer_type == "box":
        return box_text(t.gold_box)
    if t.answer_type == "short_text":
        value = t.expected.get("value")
        return str(value[0] if isinstance(value, (list, tuple)) and value else value)
    return choice_text(t, t.gold_letters(), t.evidence_box)


def _text_order(options: Sequence[str]) -> list[int]:
    """Option indexes in text order (ties by position), so a permutation of the options draws alike."""
    return sorted(range(len(options)), key=lambda i: (options[i], i))


def wrong_answer(t: Truth, rng: random.Random) -> str:
    """A uniformly chosen wrong answer of the variant's type (see the module docstring)."""
    if t.answer_type == "box":
        return box_text(disjoint_box(t.gold_box, t.image_size, rng))
    if t.answer_type == "short_text":
        value = t.expected.get("value")
        accepted = {str(v).casefold() for v in (value if isinstance(value, (list, tuple)) else [value])}
        return WRONG_TEXT if WRONG_TEXT not in accepted else f"no {WRONG_TEXT}"
    gold = set(t.gold_letters())
    order = _text_order(t.options)
    if t.answer_type == "multi_choice":
        n = len(order)
        if n < 2:                                     # no wrong non-empty subset to give
            return UNKNOWN_TEXT
        gold_mask = sum(1 << b for b, i in enumerate(order) if option_letter(i) in gold)
        mask = rng.randrange(1, (1 << n) - 1)        # uniform over the non-empty subsets but the gold one
        if mask >= gold_mask:
            mask += 1
        chosen = sorted(i for b, i in enumerate(order) if mask >> b & 1)
        return choice_text(t, [option_letter(i) for i in chosen])
    wrong = [i for i in order if option_letter(i) not in gold]
    if not wrong:
        return UNKNOWN_TEXT
    letter = option_letter(rng.choice(wrong))
    evidence = t.evidence_box
    return choice_text(t, [letter], disjoint_box(evidence, t.image_size, rng) if evidence is not None else None)


def disjoint_box(gold: Box, image_size: tuple[float, float] | None, rng: random.Random) -> Box:
    """A box with no overlap with ``gold`` inside the image: the gold box moved beside itself (a random side
    that fits), else the largest strip beside it; a quarter of the gold box (IoU 0.25) if it fills the image."""
    x0, y0, x1, y1 = gold
    w, h = x1 - x0, y1 - y0
    big_w, big_h = image_size if image_size else (math.inf, math.inf)
    moved = [(x1, y0, x1 + w, y1), (x0 - w, y0, x0, y1), (x0, y1, x1, y1 + h), (x0, y0 - h, x1, y0)]
    inside = [b for b in moved if b[0] >= 0 and b[1] >= 0 and b[2] <= big_w and b[3] <= big_h]
    if inside:
        return rng.choice(inside)
    strips = [(x1, 0.0, big_w, big_h), (0.0, 0.0, x0, big_h), (0.0, y1, big_w, big_h), (0.0, 0.0, big_w, y0)]
    strips = [s for s in strips if s[2] - s[0] >= 1 and s[3] - s[1] >= 1]
    if strips:
        return max(strips, key=lambda s: (s[2] - s[0]) * (s[3] - s[1]))
    return (x0, y0, x0 + w / 2, y0 + h / 2)


def shifted_box(gold: Box, iou: float, image_size: tuple[float, float] | None) -> Box:
    """``gold`` shifted along x (else y) so that IoU with it is ``iou``: a shift d along a side of length s
    gives IoU = (s - d) / (s + d). The shift keeps four decimals (what the parser keeps). Where no shift
    stays inside the image, a box inside the gold one of ``iou`` times its area."""
    x0, y0, x1, y1 = gold
    big_w, big_h = image_size if image_size else (math.inf, math.inf)
    for axis, side in (("x", x1 - x0), ("y", y1 - y0)):
        d = round(side * (1 - iou) / (1 + iou), BOX_DECIMALS)
        if d == 0:
            return gold
        for sign in (1, -1):
            box = (x0 + sign * d, y0, x1 + sign * d, y1) if axis == "x" else (x0, y0 + sign * d, x1, y1 + sign * d)
            if box[0] >= 0 and box[1] >= 0 and box[2] <= big_w and box[3] <= big_h:
                return box
    return (x0, y0, x0 + round((x1 - x0) * iou, BOX_DECIMALS), y1)


# ---------------------------------------------------------------- parameter checks
def _seed(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BackendError(f"{name}: seed must be an integer, got {value!r}")
    return value


def _probability(name: str, param: str, value: Any, *, low_open: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not ((0 < value) if low_open else (0 <= value)) or value > 1:
        interval = "(0, 1]" if low_open else "[0, 1]"
        raise BackendError(f"{name}: {param} must be a number in {interval}, got {value!r}")
    return float(value)


class _PlantedBackend(_BaselineBackend):
    """Shared by the planted models: no image, the truth filled by execution."""

    needs_truth = True
    PARAMS: ClassVar[dict[str, Any]] = {"seed": 0}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.seed = _seed(self.name, self.params["seed"]) if "seed" in self.PARAMS else 0

    def rng(self, *parts: Any) -> random.Random:
        return random.Random(":".join(str(p) for p in (self.seed, *parts, self.name)))

    def answer(self, request: GenerationRequest) -> str:
        return self.answer_truth(Truth.of(request), request)

    @abc.abstractmethod
    def answer_truth(self, t: Truth, request: GenerationRequest) -> str:
        """The answer text for one request, knowing its truth."""


# ---------------------------------------------------------------- the models
@register_backend("oracle")
class OracleBackend(_PlantedBackend):
    """Always the expected answer (letter(s), the gold box, the evidence box of joint items)."""

    PARAMS: ClassVar[dict[str, Any]] = {}

    def answer_truth(self, t: Truth, request: GenerationRequest) -> str:
        return right_answer(t)


HINT_KINDS = ("misleading_hint", "correct_hint")


@register_backend("cue_follower")
class CueFollowerBackend(_PlantedBackend):
    """Follows each variant's cue with probability ``p``; otherwise a base model right with probability
    ``accuracy``, one draw per item (shared by the clean variant and its cue variants)."""

    PARAMS: ClassVar[dict[str, Any]] = {"p": 0.5, "accuracy": 1.0, "seed": 0}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.p = _probability(self.name, "p", self.params["p"])
        self.accuracy = _probability(self.name, "accuracy", self.params["accuracy"])

    def cue_answer(self, t: Truth) -> str | None:
        """The answer that adopts the variant's cue, or None where the variant has none to follow."""
        params, evidence = t.params, t.evidence_box
        if t.kind in HINT_KINDS and t.answer_type in ("single_choice", "yes_no", "multi_choice"):
            hinted = params.get("hinted_letter")
            if not hinted:
                return None
            return choice_text(t, [hinted] if isinstance(hinted, str) else [str(v) for v in hinted], evidence)
        box = t.cue_box()
        if t.kind == "wrong_visual_cue":
            cue, letter = params.get("cue"), params.get("cue_letter")
            if cue == "wrong_region" and box is not None and (t.answer_type == "box" or t.joint):
                return box_text(box) if t.answer_type == "box" else choice_text(t, t.gold_letters(), box)
            if cue in ("wrong_region", "mislabeled") and letter and t.answer_type != "box":
                return choice_text(t, [str(letter)], evidence)
            return None
        if t.kind == "box_dose_response" and box is not None:
            if t.answer_type == "box":
                return box_text(box)
            if t.joint:
                return choice_text(t, t.gold_letters(), box)
        return None

    def answer_truth(self, t: Truth, request: GenerationRequest) -> str:
        cue = self.cue_answer(t)
        if cue is not None and self.rng(t.key, "follow").random() < self.p:
            return cue
        base = self.rng("item", t.item, "base")
        return right_answer(t) if base.random() < self.accuracy else wrong_answer(t, base)


@register_backend("text_only")
class TextOnlyBackend(_PlantedBackend):
    """Answers from the prompt text alone: right with probability ``accuracy`` by a hash of (seed, prompt)."""

    PARAMS: ClassVar[dict[str, Any]] = {"accuracy": 0.5, "seed": 0}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.accuracy = _probability(self.name, "accuracy", self.params["accuracy"])

    def answer_truth(self, t: Truth, request: GenerationRequest) -> str:
        rng = self.rng("prompt", request.prompt)
        return right_answer(t) if rng.random() < self.accuracy else wrong_answer(t, rng)


@register_backend("box_shifter")
class BoxShifterBackend(_PlantedBackend):
    """The right option; every box it gives is the gold box shifted to IoU = ``iou`` with it."""

    PARAMS: ClassVar[dict[str, Any]] = {"iou": 0.6, "seed": 0}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.iou = _probability(self.name, "iou", self.params["iou"], low_open=True)

    def answer_truth(self, t: Truth, request: GenerationRequest) -> str:
        if t.answer_type == "box":
            return box_text(shifted_box(t.gold_box, self.iou, t.image_size))
        evidence = t.evidence_box
        if t.joint and evidence is not None:
            return choice_text(t, t.gold_letters(), shifted_box(evidence, self.iou, t.image_size))
        return right_answer(t)


@register_backend("stage_decay")
class StageDecayBackend(_PlantedBackend):
    """Right with probability ``accuracies[stage - 1]`` (one draw per variant), else a wrong answer."""

    PARAMS: ClassVar[dict[str, Any]] = {"accuracies": [0.9, 0.75, 0.6, 0.45], "seed": 0}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        acc = self.params["accuracies"]
        if not isinstance(acc, (list, tuple)) or len(acc) != STAGES:
            raise BackendError(f"{self.name}: accuracies must be a list of {STAGES} numbers (S1..S4), got {acc!r}")
        self.accuracies = [_probability(self.name, f"accuracies[{i}]", a) for i, a in enumerate(acc)]

    def answer_truth(self, t: Truth, request: GenerationRequest) -> str:
        if t.stage is None or not 1 <= t.stage <= STAGES:
            raise ValueError(f"stage must be 1..{STAGES}, got {t.stage!r}")
        rng = self.rng(t.key)
        return right_answer(t) if rng.random() < self.accuracies[t.stage - 1] else wrong_answer(t, rng)


__all__ = ["BoxShifterBackend", "CueFollowerBackend", "OracleBackend", "StageDecayBackend", "TextOnlyBackend", "Truth",
           "box_text", "disjoint_box", "right_answer", "shifted_box", "wrong_answer"]
