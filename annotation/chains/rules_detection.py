"""Rule kinds, part 2: S2 detection and localization (see rules.py for the conventions)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .rules import (
    BOX,
    CONTAINERS,
    LESION,
    LESION_REFERENCE,
    MULTI,
    YES_NO,
    Choice,
    Draft,
    RuleBase,
    area,
    centre,
    fmt_box,
    group,
    inside,
    organ_of,
    overlap,
    rule_kind,
)


@rule_kind("abnormality")
class Abnormality(RuleBase):
    """'yes' with any lesion; 'no' only for an annotated image (anatomy boxes, no lesion)."""

    kind: Literal["abnormality"]
    require_anatomy_for_normal: bool = True
    answer_types = YES_NO

    def build(self, ctx, rng, n):
        if ctx.lesions:
            return Draft("yes", evidence=tuple(b.id for b in ctx.lesions))
        if self.require_anatomy_for_normal and not ctx.organs:
            return None
        return Draft("no")


@rule_kind("finding_presence")
class FindingPresence(Choice):
    """'yes' for a lesion label present in its organ, 'no' for a finding absent from an organ present.
    Every such fact is a candidate; the balancer asks the one whose question text most needs its
    answer, so that '(finding, organ)' in the question does not predict the answer."""

    kind: Literal["finding_presence"]
    placeholders = LESION
    answer_types = YES_NO

    def candidates(self, ctx, rng, n):
        out = [Draft("yes", values={"finding": f, "organ": o}, evidence=tuple(b.id for b in bs))
               for o, f, bs in self.present_pairs(ctx)]
        out += [Draft("no", values={"finding": f, "organ": o}, evidence=(box.id,))
                for o, box, f in self.absent_pairs(ctx)]
        return out

    def build(self, ctx, rng, n):
        found = self.candidates(ctx, rng, n)
        return found[0] if found else None


@rule_kind("lesion_count")
class LesionCount(Choice):
    """Count of lesions with a label in an organ (0 for a finding absent from an organ present)."""

    kind: Literal["lesion_count"]
    bins: list[str] = Field(default_factory=lambda: ["0", "1", "2", "3 or more"], min_length=2)
    placeholders = LESION

    def _draft(self, count, finding, organ, evidence):
        return Draft(self.bins[min(count, len(self.bins) - 1)], values={"finding": finding, "organ": organ},
                     tiers=(self.bins,), evidence=evidence, meta={"count": count})

    def candidates(self, ctx, rng, n):
        out = [self._draft(len(bs), f, o, tuple(b.id for b in bs)) for o, f, bs in self.present_pairs(ctx)]
        out += [self._draft(0, f, o, (box.id,)) for o, box, f in self.absent_pairs(ctx)]
        return out

    def build(self, ctx, rng, n):
        found = self.candidates(ctx, rng, n)
        return found[0] if found else None


@rule_kind("lesion_location")
class LesionLocation(RuleBase):
    """Organ of the index lesion; distractors: other organs present that do not contain the lesion
    centre (organs of the region pool first), then absent organs of the region pool. The organ is
    deliberately not a placeholder (it would give the answer away)."""

    kind: Literal["lesion_location"]
    exclude_organs: list[str] = Field(default_factory=lambda: list(CONTAINERS))
    organs_by_region: dict[str, list[str]] = Field(default_factory=dict)
    placeholders = frozenset({"finding"})

    def build(self, ctx, rng, n):
        gold = ctx.organ
        if ctx.index is None or not gold:
            return None
        c = centre(ctx.index.xyxy)
        present = [k for k in ctx.organ_names(self.exclude_organs) if k != gold and not inside(c, ctx.organs[k].xyxy)]
        regional = self.organs_by_region.get(ctx.region, ())
        groups = {group(k) for k in ctx.organs} | {group(gold)}
        major = [k for k in present if group(k) in regional]          # solid organs before vessels and bones
        absent = [o for o in regional if group(o) not in groups]
        return Draft(gold, values={"finding": LESION_REFERENCE}, tiers=(major, present, absent),
                     evidence=(ctx.index.id,))


@rule_kind("lesion_box")
class LesionBox(RuleBase):
    """Box answer: the index lesion's box."""

    kind: Literal["lesion_box"]
    placeholders = LESION
    answer_types = BOX

    def build(self, ctx, rng, n):
        if ctx.index is None or not ctx.organ:
            return None
        return Draft([float(v) for v in ctx.index.xyxy], values=ctx.lesion_values(), evidence=(ctx.index.id,))


def _size_class(box, ctx) -> str:
    share = area(box.xyxy) / max(ctx.facts.width * ctx.facts.height, 1)
    return "small" if share < 0.01 else "medium" if share < 0.06 else "large"


def _box_draft(gold, box, values, ctx):
    """A box question. Its balance key names the structure and the box's size class, so that the
    balancer keeps 'yes' and 'no' even for small and large boxes alike (the coordinates in the text
    would otherwise tell a lesion box from an organ box, and so the answer)."""
    named = values.get("finding") or values.get("structure")
    return Draft(gold, values={**values, "box": fmt_box(box.xyxy)}, evidence=(box.id,),
                 meta={"box_id": box.id, "box": [float(v) for v in box.xyxy],
                       "balance_key": f"{named}|{_size_class(box, ctx)}"})


class BoxQuestion(Choice):
    p_negative: float = Field(0.5, ge=0, le=1, description="unused since the balancer chooses between 'yes' and "
                                                           "'no' facts; kept so older definitions still validate")
    box_suffix: str = Field(" The marked box is {box}.", pattern=r"\{box\}")
    answer_types = YES_NO


def _labels_in(ctx, box, grp_synonyms) -> set:
    """Lesion labels (with their synonyms) that a box contains or touches."""
    out = {b.label for b in ctx.lesions if overlap(b.xyxy, box.xyxy)}
    for grp in grp_synonyms:
        if out.intersection(grp):
            out.update(grp)
    return out


@rule_kind("finding_in_box")
class FindingInBox(BoxQuestion):
    """Is a finding inside a box: a lesion's own box, or an organ box wholly containing it, with its
    label ('yes'); a lesion box with another finding of its organ, or an organ box with a finding
    that no lesion in it has ('no'). Every structure word and both box sizes are asked both ways, so
    neither the word nor the box's size predicts the answer. Box coordinates go into the question as
    (x0, y0, x1, y1)."""

    kind: Literal["finding_in_box"]
    placeholders = frozenset({"finding", "box"})

    def candidates(self, ctx, rng, n):
        out = []
        for b in ctx.lesions:
            out.append(_box_draft("yes", b, {"finding": b.label}, ctx))
            there = _labels_in(ctx, b, self.synonyms)
            out += [_box_draft("no", b, {"finding": f}, ctx)
                    for f in self.findings_by_organ.get(group(organ_of(b) or ""), ()) if f not in there]
        for name in ctx.organ_names(self.exclude_organs):
            box = ctx.organs[name]
            there = _labels_in(ctx, box, self.synonyms)
            inside = {b.label for b in ctx.lesions if overlap(b.xyxy, box.xyxy) == area(b.xyxy)}
            out += [_box_draft("yes", box, {"finding": f}, ctx) for f in sorted(inside)]    # large boxes say yes too
            out += [_box_draft("no", box, {"finding": f}, ctx)
                    for f in self.findings_by_organ.get(group(name), ()) if f not in there]
        return out

    def build(self, ctx, rng, n):
        found = self.candidates(ctx, rng, n)
        return found[0] if found else None


@rule_kind("box_text_match")
class BoxTextMatch(BoxQuestion):
    """Does a box show a named structure: a lesion's box with its label or an organ box with its name
    ('yes'); the same box with the name of an organ that does not touch it, or a lesion's box with a
    finding it is not ('no')."""

    kind: Literal["box_text_match"]
    max_overlap: float = Field(0.05, ge=0, lt=1)    # 'no' organ: overlap / smaller box area
    placeholders = frozenset({"structure", "box"})

    def candidates(self, ctx, rng, n):
        names = ctx.organ_names(self.exclude_organs)
        boxes = [(b, b.label) for b in ctx.lesions] + [(ctx.organs[k], k) for k in names]
        out = []
        for box, structure in boxes:
            bx, a = box.xyxy, area(box.xyxy)
            out.append(_box_draft("yes", box, {"structure": structure}, ctx))
            for k in names:
                if k == structure:
                    continue
                o = overlap(ctx.organs[k].xyxy, bx)
                if (box.kind == "lesion" and o) or o > self.max_overlap * min(a, area(ctx.organs[k].xyxy)):
                    continue
                out.append(_box_draft("no", box, {"structure": k}, ctx))
            if box.kind == "lesion":
                there = _labels_in(ctx, box, self.synonyms)
                out += [_box_draft("no", box, {"structure": f}, ctx)
                        for f in self.findings_by_organ.get(group(organ_of(box) or ""), ()) if f not in there]
        return out

    def build(self, ctx, rng, n):
        found = self.candidates(ctx, rng, n)
        return found[0] if found else None


@rule_kind("list_findings")
class ListFindings(Choice):
    """Multi-choice: every '<label> in the <organ>' present. Distractors: findings in organs without
    lesions (present, then absent organs of the region pool), then other findings in the lesion
    organs that are not there and not a synonym of one that is (``synonyms``: nodule ~ mass)."""

    kind: Literal["list_findings"]
    phrase: str = "{finding} in the {organ}"
    organs_by_region: dict[str, list[str]] = Field(default_factory=dict)
    synonyms: list[list[str]] = Field(default_factory=lambda: [["nodule", "mass"]])
    answer_types = MULTI

    @field_validator("phrase")
    @classmethod
    def _phrase(cls, v):
        if "{finding}" not in v or "{organ}" not in v:
            raise ValueError("phrase must contain {finding} and {organ}")
        return v

    def build(self, ctx, rng, n):
        if not ctx.lesions or any(not organ_of(b) for b in ctx.lesions):
            return None
        gold = list(dict.fromkeys(self.phrase.format(finding=b.label, organ=organ_of(b)) for b in ctx.lesions))
        fb, groups, fmt = self.findings_by_organ, {group(k) for k in ctx.organs}, self.phrase.format
        present = [k for k in ctx.organ_names(self.exclude_organs) if k not in ctx.lesion_organs]
        absent = [o for o in self.organs_by_region.get(ctx.region, ()) if group(o) not in groups]
        tiers = [[fmt(finding=f, organ=o) for o in organs for f in fb.get(group(o), ())]
                 for organs in (present, absent)]
        same = []
        for o in dict.fromkeys(organ_of(b) for b in ctx.lesions):
            taken = {b.label for b in ctx.lesions if organ_of(b) == o}
            for grp in self.synonyms:
                if taken.intersection(grp):
                    taken.update(grp)
            same += [fmt(finding=f, organ=o) for f in fb.get(group(o), ()) if f not in taken]
        return Draft(gold, tiers=(*tiers, same), evidence=tuple(b.id for b in ctx.lesions))
