"""Rule kinds, part 2: S2 detection and localization (see rules.py for the conventions)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .rules import (
    BOX, CONTAINERS, LESION, MULTI, YES_NO, Choice, Draft, RuleBase, area, centre, fmt_box, group, inside, organ_of,
    overlap, rule_kind,
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
    """'yes' for the index lesion in its organ; for a lesion-free image 'no' about an organ present."""

    kind: Literal["finding_presence"]
    placeholders = LESION
    answer_types = YES_NO

    def build(self, ctx, rng, n):
        if ctx.index is not None:
            if not ctx.organ:
                return None
            return Draft("yes", values={"finding": ctx.index.label, "organ": ctx.organ}, evidence=(ctx.index.id,))
        site = self.negative_site(ctx, rng)
        if site is None:
            return None
        name, box, finding = site
        return Draft("no", values={"finding": finding, "organ": name}, evidence=(box.id,))


@rule_kind("lesion_count")
class LesionCount(Choice):
    """Count of lesions with the index lesion's label in its organ (lesion-free: 0 in an organ)."""

    kind: Literal["lesion_count"]
    bins: list[str] = Field(default_factory=lambda: ["0", "1", "2", "3 or more"], min_length=2)
    placeholders = LESION

    def build(self, ctx, rng, n):
        if ctx.index is not None:
            if not ctx.organ:
                return None
            label = ctx.index.label
            same = [b for b in ctx.lesions if b.label == label and organ_of(b) == ctx.organ]
            count, organ, evidence = len(same), ctx.organ, tuple(b.id for b in same)
        else:
            site = self.negative_site(ctx, rng)
            if site is None:
                return None
            organ, box, label = site
            count, evidence = 0, (box.id,)
        gold = self.bins[min(count, len(self.bins) - 1)]
        return Draft(gold, values={"finding": label, "organ": organ}, tiers=(self.bins,), evidence=evidence,
                     meta={"count": count})


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
        return Draft(gold, values={"finding": ctx.finding}, tiers=(major, present, absent), evidence=(ctx.index.id,))


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


class BoxQuestion(Choice):
    p_negative: float = Field(0.5, ge=0, le=1)
    box_suffix: str = Field(" The marked box is {box}.", pattern=r"\{box\}")
    answer_types = YES_NO


@rule_kind("finding_in_box")
class FindingInBox(BoxQuestion):
    """Is the index lesion's label inside a box: its own box ('yes'), or with a seeded chance an organ
    box that no lesion touches ('no'). Box coordinates go into the question as (x0, y0, x1, y1)."""

    kind: Literal["finding_in_box"]
    placeholders = frozenset({"finding", "box"})

    def build(self, ctx, rng, n):
        if ctx.index is not None:
            clear = [k for k in ctx.organ_names(self.exclude_organs)
                     if not any(overlap(ctx.organs[k].xyxy, b.xyxy) for b in ctx.lesions)]
            box, finding = ctx.index, ctx.index.label
            if clear and rng.random() < self.p_negative:
                box = ctx.organs[rng.choice(clear)]
        else:
            site = self.negative_site(ctx, rng)
            if site is None:
                return None
            _, box, finding = site
        gold = "yes" if box is ctx.index else "no"
        return Draft(gold, values={"finding": finding, "box": fmt_box(box.xyxy)}, evidence=(box.id,),
                     meta={"box_id": box.id, "box": [float(v) for v in box.xyxy]})


@rule_kind("box_text_match")
class BoxTextMatch(BoxQuestion):
    """Does a box show a named structure: the index lesion's box with its label ('yes') or an organ
    that does not touch it ('no'); lesion-free: an organ box with its name or a non-overlapping organ."""

    kind: Literal["box_text_match"]
    max_overlap: float = Field(0.05, ge=0, lt=1)    # 'no' organ: overlap / smaller box area
    placeholders = frozenset({"structure", "box"})

    def build(self, ctx, rng, n):
        names = ctx.organ_names(self.exclude_organs)
        if ctx.index is not None:
            box, structure = ctx.index, ctx.index.label
        elif names:
            structure = rng.choice(names)
            box = ctx.organs[structure]
        else:
            return None
        bx, a = box.xyxy, area(box.xyxy)
        others = [k for k in names if k != structure and overlap(ctx.organs[k].xyxy, bx)
                  <= self.max_overlap * min(a, area(ctx.organs[k].xyxy))]
        if ctx.index is not None:
            others = [k for k in others if not overlap(ctx.organs[k].xyxy, bx)]
        gold = "yes"
        if others and rng.random() < self.p_negative:
            structure, gold = rng.choice(others), "no"
        return Draft(gold, values={"structure": structure, "box": fmt_box(bx)}, evidence=(box.id,),
                     meta={"box_id": box.id, "box": [float(v) for v in bx]})


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
