"""The Label Studio labeling config of an annotation batch, generated from our taxonomy.

Controls (their names are the contract with `convert.parse_result` and the pull):
- `findings` / `anatomy`: RectangleLabels (pixel-snapped) for lesions and anatomical structures;
- `shape`, `margin`, `density`, `composition`: per-region Choices characterising a finding box;
- `answer`: Choices of the task's QA item (options come from the task data: `$options`);
- `question` and `rationale`: TextAreas (the question as the radiologist would phrase it, and why).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

from annotation.phantoms.catalogue import CATALOGUE

BOX_CONTROLS = {"findings": "lesion", "anatomy": "anatomy"}
ATTRIBUTE_CONTROLS = ("shape", "margin", "density", "composition")
ANSWER_CONTROL = "answer"
TEXT_CONTROLS = ("question", "rationale")

# a colour per lesion label, stable across batches (hash of the label into a fixed palette)
_PALETTE = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#bfef45",
            "#fabed4", "#469990", "#dcbeff", "#9a6324", "#800000", "#aaffc3", "#808000", "#000075")


def _colour(label: str) -> str:
    return _PALETTE[int(hashlib.sha256(label.encode()).hexdigest(), 16) % len(_PALETTE)]


@dataclass(frozen=True)
class Vocabulary:
    lesions: tuple[str, ...]
    anatomy: tuple[str, ...]
    attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def labels(self) -> dict[str, tuple[str, ...]]:
        return {"findings": self.lesions, "anatomy": self.anatomy}


def default_vocabulary(extra_lesions=(), extra_anatomy=()) -> Vocabulary:
    """The phantom catalogue's vocabulary plus any labels already in use (given by the caller)."""
    types = [t for group in CATALOGUE.values() for t in group]
    lesions = {t.label for t in types if t.label != "auto"} | {"nodule", "mass"} | set(extra_lesions)
    anatomy = {"liver", "spleen", "right kidney", "left kidney", "right lung", "left lung", "heart", "aorta",
               "stomach", "gallbladder", "vertebra", "brain", "lateral ventricles", "skull"} | set(extra_anatomy)
    attributes = {
        "shape": tuple(sorted({s for t in types for s in t.shapes})),
        "margin": tuple(sorted({m for t in types for m in t.margins})),
        "density": tuple(sorted({t.density for t in types})),
        "composition": tuple(sorted({t.composition for t in types})),
    }
    return Vocabulary(lesions=tuple(sorted(lesions)), anatomy=tuple(sorted(anatomy)), attributes=attributes)


def build_label_config(vocabulary: Vocabulary, *, with_qa: bool, multiple: bool = False) -> str:
    """`multiple`: the answer accepts several options (multi-choice items)."""
    a = quoteattr
    lines = ['<View>',
             '  <Header value="$title"/>',
             '  <Image name="image" value="$image" zoom="true" zoomControl="true" rotateControl="false"'
             ' brightnessControl="true" contrastControl="true"/>',
             '  <Header value="Findings (lesions)" size="5"/>',
             '  <RectangleLabels name="findings" toName="image" snap="pixel" strokeWidth="2" canRotate="false">']
    lines += [f'    <Label value={a(label)} background={a(_colour(label))}/>' for label in vocabulary.lesions]
    lines += ['  </RectangleLabels>',
              '  <Header value="Anatomy" size="5"/>',
              '  <RectangleLabels name="anatomy" toName="image" snap="pixel" strokeWidth="1" canRotate="false"'
              ' opacity="0.4">']
    lines += [f'    <Label value={a(label)} background="#9e9e9e"/>' for label in vocabulary.anatomy]
    lines += ['  </RectangleLabels>',
              '  <View visibleWhen="region-selected" whenTagName="findings">',
              '    <Header value="Characterise the selected finding" size="5"/>']
    for name in ATTRIBUTE_CONTROLS:
        values = vocabulary.attributes.get(name, ())
        if not values:
            continue
        lines.append(f'    <Choices name={a(name)} toName="image" perRegion="true" choice="single-radio"'
                     f' showInline="true">')
        lines += [f'      <Choice value={a(v)}/>' for v in values]
        lines.append('    </Choices>')
    lines.append('  </View>')
    if with_qa:
        lines += ['  <Header value="Question" size="5"/>',
                  '  <Text name="question_text" value="$question"/>',
                  f'  <Choices name="{ANSWER_CONTROL}" toName="image" value="$options"'
                  f' choice="{"multiple" if multiple else "single-radio"}"/>',
                  '  <TextArea name="question" toName="image" placeholder="Rephrase or correct the question (optional)"'
                  ' maxSubmissions="1" editable="true"/>']
    lines += ['  <TextArea name="rationale" toName="image" placeholder="Rationale (optional)"'
              ' maxSubmissions="1" editable="true"/>',
              '</View>']
    return "\n".join(lines) + "\n"


def config_hash(config: str) -> str:
    return hashlib.sha256(config.encode()).hexdigest()
