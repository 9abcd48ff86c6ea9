"""Rule kinds, part 3: S3 characterization and S4 diagnosis & decision, all about the index lesion.

Every kind here returns None without an index lesion with an ``organ`` attribute, and None when the
attribute it reads is missing: on the non-contrast phantoms, ``enhancement``/``relation``,
``severity`` and ``grade`` are never recorded, so those categories are simply not applicable.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .rules import LESION, YES_NO, Ctx, Draft, RuleBase, group, inside, centre, lookup, organ_of, rule_kind


class LesionRule(RuleBase):
    placeholders = LESION

    def build(self, ctx: Ctx, rng, n):
        if ctx.index is None or not ctx.organ:
            return None
        return self.derive(ctx, rng, n)

    def derive(self, ctx: Ctx, rng, n) -> Draft | None:   # pragma: no cover
        raise NotImplementedError


class SizeBin(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    label: str = Field(min_length=1)
    min: float | None = None       # inclusive
    max: float | None = None       # exclusive


@rule_kind("size_bin")
class SizeBins(LesionRule):
    """Diameter bin; lesions within ``boundary_margin_mm`` of a bin edge are not applicable."""

    kind: Literal["size_bin"]
    attribute: str = "diameter_mm"
    bins: list[SizeBin] = Field(min_length=2)
    boundary_margin_mm: float = Field(1.0, ge=0)

    @field_validator("bins")
    @classmethod
    def _contiguous(cls, bins):
        if bins[0].min not in (None, 0) or bins[-1].max is not None:
            raise ValueError("the first bin must start at 0 (or None) and the last must be open (max None)")
        for a, b in zip(bins, bins[1:]):
            if a.max is None or a.max != b.min:
                raise ValueError(f"bins must be contiguous: {a.label!r} ends at {a.max}, {b.label!r} starts at {b.min}")
        return bins

    def derive(self, ctx, rng, n):
        d = ctx.attrs.get(self.attribute)
        if not isinstance(d, (int, float)):
            return None
        for i, b in enumerate(self.bins):
            if (b.min or 0) <= d and (b.max is None or d < b.max):
                edges = [e for e in (b.min, b.max) if e]
                if any(abs(d - e) < self.boundary_margin_mm for e in edges):
                    return None
                near = [self.bins[j].label for j in (i - 1, i + 1) if 0 <= j < len(self.bins)]
                return Draft(b.label, values=ctx.lesion_values(), tiers=(near, [x.label for x in self.bins]),
                             evidence=(ctx.index.id,), meta={"diameter_mm": d})
        return None


@rule_kind("lesion_attribute")
class LesionAttribute(LesionRule):
    """A categorical attribute of the index lesion (shape, margin, composition, ...); the gold must
    be in the pool so that every option has the same vocabulary."""

    kind: Literal["lesion_attribute"]
    attribute: str = Field(min_length=1)
    label_map: dict[str, str] = Field(default_factory=dict)
    pool: list[str] = Field(min_length=2)

    def derive(self, ctx, rng, n):
        v = ctx.attrs.get(self.attribute)
        gold = self.label_map.get(v, v) if isinstance(v, str) else None
        if gold not in self.pool:
            return None
        return Draft(gold, values=ctx.lesion_values(), tiers=(self.pool,), evidence=(ctx.index.id,))


@rule_kind("density")
class Density(LesionRule):
    """Density / signal intensity with a per-modality vocabulary and {density_term}."""

    kind: Literal["density"]
    attribute: str = "density"
    pools: dict[str, list[str]] = Field(min_length=1)    # modality -> values
    terms: dict[str, str] = Field(min_length=1)          # modality -> 'density' / 'signal intensity'
    placeholders = LESION | {"density_term"}

    def derive(self, ctx, rng, n):
        pool, term, v = self.pools.get(ctx.mod), self.terms.get(ctx.mod), ctx.attrs.get(self.attribute)
        if not pool or not term or v not in pool:
            return None
        return Draft(v, values=ctx.lesion_values(density_term=term), tiers=(pool,), evidence=(ctx.index.id,))


class DistributionLabels(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    solitary: str = "solitary"
    multiple: str = "multiple"
    unilateral: str = "multiple, unilateral"
    bilateral: str = "multiple, bilateral"
    diffuse: str = "diffuse"


@rule_kind("distribution")
class Distribution(LesionRule):
    """Solitary / multiple; lesions all in one paired organ (left/right lung, kidney) are unilateral
    or bilateral. Options that would also be true are never offered."""

    kind: Literal["distribution"]
    labels: DistributionLabels = Field(default_factory=DistributionLabels)

    def derive(self, ctx, rng, n):
        L, organs = self.labels, [organ_of(b) for b in ctx.lesions]
        if not all(organs):
            return None
        sides = {o.split(" ", 1)[0] for o in organs}
        paired = len({group(o) for o in organs}) == 1 and sides <= {"left", "right"}
        if len(organs) == 1:
            gold, pool = L.solitary, [L.multiple, L.unilateral, L.bilateral, L.diffuse]
        elif paired:
            gold = L.bilateral if len(sides) == 2 else L.unilateral
            pool = [L.solitary, L.unilateral, L.bilateral, L.diffuse]
        else:
            gold, pool = L.multiple, [L.solitary, L.diffuse]
        return Draft(gold, values=ctx.lesion_values(), tiers=(pool,), evidence=tuple(b.id for b in ctx.lesions))


class DiagnosisPools(LesionRule):
    """Shared data: diagnoses per organ group, keyed 'MOD:group' (preferred) or 'group'."""

    pools: dict[str, list[str]] = Field(min_length=2)
    exclusive: list[list[str]] = Field(default_factory=list)   # never offered beside each other

    def banned(self, ctx: Ctx, gold: str) -> set:
        out = {gold} | {b.attributes.get("diagnosis") for b in ctx.lesions}
        for grp in self.exclusive:
            if gold in grp:
                out.update(grp)
        return out

    def same_group(self, ctx: Ctx) -> tuple[str | None, list[str]]:
        g = group(ctx.organ)
        key = f"{ctx.mod}:{g}" if f"{ctx.mod}:{g}" in self.pools else (g if g in self.pools else None)
        return key, (self.pools[key] if key else [])


@rule_kind("diagnosis")
class Diagnosis(DiagnosisPools):
    """Gold diagnosis; distractors: the same organ group's pool first, then other groups of the same
    modality. Diagnoses of the image's other lesions are never offered."""

    kind: Literal["diagnosis"]

    def derive(self, ctx, rng, n):
        gold = ctx.attrs.get("diagnosis")
        if not gold:
            return None
        key, same = self.same_group(ctx)
        prefix = key.split(":")[0] + ":" if key and ":" in key else None
        bad = self.banned(ctx, gold)
        others = [d for k, lst in self.pools.items() if k != key and (k.startswith(prefix) if prefix else ":" not in k)
                  for d in lst if d not in same]
        return Draft(gold, values=ctx.lesion_values(), tiers=([d for d in same if d not in bad],
                     [d for d in others if d not in bad]), evidence=(ctx.index.id,))


@rule_kind("rule_out")
class RuleOut(DiagnosisPools):
    """Options: gold diagnosis + (n-2) differentials of the same organ group + one diagnosis of an
    organ group of another region (absent from the image) that never occurs in this group; that one
    is the answer ('least likely')."""

    kind: Literal["rule_out"]
    organs_by_region: dict[str, list[str]] = Field(default_factory=dict)   # groups of the image's region

    def derive(self, ctx, rng, n):
        gold = ctx.attrs.get("diagnosis")
        if not gold:
            return None
        key, same = self.same_group(ctx)
        bad = self.banned(ctx, gold)
        plausible = [d for d in same if d not in bad]
        g = group(ctx.organ)
        near = {group(k) for k in ctx.organs} | {group(o) for o in ctx.lesion_organs if o}
        near.update(self.organs_by_region.get(ctx.region, ()))
        in_group = {d for k, lst in self.pools.items() if k.split(":")[-1] == g for d in lst}
        for grp in self.exclusive:   # 'calcification' is no implausible twin of 'calcified granuloma'
            if in_group.intersection(grp):
                bad.update(grp)
        implausible = [d for k, lst in self.pools.items() if k.split(":")[-1] not in near
                       for d in lst if d not in in_group and d not in bad]
        k = max(1, n - 2)
        if not plausible or not implausible:
            return None
        picked = plausible if len(plausible) <= k else rng.sample(plausible, k)
        odd = rng.choice(list(dict.fromkeys(implausible)))
        return Draft(odd, values=ctx.lesion_values(), options=[gold, *picked, odd], evidence=(ctx.index.id,),
                     meta={"diagnosis": gold, "differentials": picked, "implausible": odd})


@rule_kind("lesion_class")
class LesionClass(LesionRule):
    """Benign vs malignant from a diagnosis mapping, else the lesion_class attribute; non-neoplastic
    diagnoses (hemorrhage, infarct, ...) are listed in ``exclude_diagnoses`` and not applicable."""

    kind: Literal["lesion_class"]
    labels: dict[str, str] = Field(default_factory=lambda: {"benign": "benign", "malignant": "malignant"},
                                   min_length=2)
    by_diagnosis: dict[str, str] = Field(default_factory=dict)
    use_attribute: bool = True
    attribute: str = "lesion_class"
    exclude_diagnoses: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_classes(self):
        bad = sorted({v for v in self.by_diagnosis.values() if v not in self.labels})
        if bad:
            raise ValueError(f"by_diagnosis uses classes missing from labels: {bad}")
        return self

    def derive(self, ctx, rng, n):
        dx = ctx.attrs.get("diagnosis")
        if dx in self.exclude_diagnoses:
            return None
        cls = self.by_diagnosis.get(dx) or (ctx.attrs.get(self.attribute) if self.use_attribute else None)
        if cls not in self.labels:
            return None
        return Draft(self.labels[cls], values=ctx.lesion_values(), options=list(self.labels.values()),
                     evidence=(ctx.index.id,))


class Support(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    attribute: str
    value: str
    phrase: str | None = None      # default: phrases[attribute][value]


@rule_kind("supporting_finding")
class SupportingFinding(LesionRule):
    """Gold: the first ``supports[diagnosis]`` entry the lesion really shows, as a phrase; distractors:
    phrases of other values of the lesion's attributes (so each contradicts the lesion)."""

    kind: Literal["supporting_finding"]
    supports: dict[str, list[Support]] = Field(min_length=1)
    phrases: dict[str, dict[str, str]] = Field(min_length=1)   # 'attribute' or 'MOD:attribute' -> value -> phrase
    placeholders = LESION | {"diagnosis"}

    def derive(self, ctx, rng, n):
        dx, a = ctx.attrs.get("diagnosis"), ctx.attrs
        hit = next((s for s in self.supports.get(dx, ()) if a.get(s.attribute) == s.value), None)
        if hit is None:
            return None
        gold = hit.phrase or (lookup(self.phrases, ctx.mod, hit.attribute) or {}).get(hit.value)
        if not gold:
            return None
        attrs = dict.fromkeys(k.split(":")[-1] for k in self.phrases)
        pool = [p for attr in attrs if a.get(attr) is not None
                for v, p in (lookup(self.phrases, ctx.mod, attr) or {}).items() if v != a.get(attr) and p != gold]
        return Draft(gold, values=ctx.lesion_values(diagnosis=dx), tiers=(pool,), evidence=(ctx.index.id,),
                     meta={"supporting_attribute": hit.attribute, "value": hit.value})


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


@rule_kind("report_statement")
class ReportStatement(LesionRule):
    """A statement built from the index lesion ('A well-defined oval hypodense cyst in the liver');
    with probability ``p_false`` one attribute is swapped for a wrong value (gold 'no'), never to a
    value that would describe another lesion of the image. The meta records the swap."""

    kind: Literal["report_statement"]
    attributes: list[str] = Field(default_factory=lambda: ["margin", "shape", "density"])
    include_size: bool = False
    swap_attributes: list[str] = Field(default_factory=lambda: ["margin", "shape", "density", "organ"])
    pools: dict[str, list[str]] = Field(default_factory=dict)   # 'attribute' or 'MOD:attribute'
    exclude_organs: list[str] = Field(default_factory=lambda: ["body", "head"])
    p_false: float = Field(0.5, ge=0, le=1)
    placeholders = frozenset({"statement"})
    answer_types = YES_NO

    def describe(self, b) -> dict:
        a = b.attributes
        d = {k: a[k] for k in self.attributes if isinstance(a.get(k), str) and a[k]}
        if self.include_size and isinstance(a.get("diameter_mm"), (int, float)):
            d["size"] = f"{round(a['diameter_mm'])} mm"
        return {**d, "label": b.label, "organ": organ_of(b)}

    def sentence(self, d: dict) -> str:
        words = [d[k] for k in ("size", *self.attributes) if k in d] + [d["label"]]
        text = f"{_article(words[0])} {' '.join(words)} in the {d['organ']}"
        return text[0].upper() + text[1:]

    def derive(self, ctx, rng, n):
        true = self.describe(ctx.index)
        others = [self.describe(b) for b in ctx.lesions if b is not ctx.index]
        swaps = []
        c = centre(ctx.index.xyxy)
        for attr in self.swap_attributes:
            if attr == "organ":
                alts = [k for k in ctx.organ_names(self.exclude_organs)
                        if k != true["organ"] and k not in ctx.lesion_organs and not inside(c, ctx.organs[k].xyxy)]
            elif attr in true:
                alts = [v for v in lookup(self.pools, ctx.mod, attr) or () if v != true[attr]]
            else:
                continue
            alts = [v for v in alts if {**true, attr: v} not in others]
            if alts:
                swaps.append((attr, alts))
        meta = {"statement_true": True, "swapped": None}
        shown = true
        if swaps and rng.random() < self.p_false:
            attr, alts = rng.choice(swaps)
            shown = {**true, attr: rng.choice(alts)}
            meta = {"statement_true": False, "swapped": {"attribute": attr, "from": true[attr], "to": shown[attr]}}
        statement = self.sentence(shown)
        meta["statement"] = statement
        return Draft("yes" if meta["statement_true"] else "no", values={"statement": statement},
                     evidence=(ctx.index.id,), meta=meta)


@rule_kind("next_step")
class NextStep(LesionRule):
    """Next step from a diagnosis mapping (else a lesion_class mapping); distractors: other steps."""

    kind: Literal["next_step"]
    by_diagnosis: dict[str, str] = Field(default_factory=dict)
    by_class: dict[str, str] = Field(default_factory=dict)
    pool: list[str] = Field(min_length=2)
    placeholders = LESION | {"diagnosis"}

    @model_validator(mode="after")
    def _steps_in_pool(self):
        bad = sorted({v for v in (*self.by_diagnosis.values(), *self.by_class.values()) if v not in self.pool})
        if bad:
            raise ValueError(f"next steps missing from pool: {bad}")
        return self

    def derive(self, ctx, rng, n):
        dx = ctx.attrs.get("diagnosis")
        step = self.by_diagnosis.get(dx) or self.by_class.get(ctx.attrs.get("lesion_class"))
        if not step:
            return None
        return Draft(step, values=ctx.lesion_values(diagnosis=dx or "the finding"), tiers=(self.pool,),
                     evidence=(ctx.index.id,), meta={"diagnosis": dx})
