"""Rule kinds, part 3: S3 characterization and S4 diagnosis & decision, all about the index lesion.

Every kind here returns None without an index lesion with an ``organ`` attribute, and None when the
attribute it reads is missing: on the non-contrast phantoms, ``enhancement``/``relation``,
``severity`` and ``grade`` are never recorded, so those categories are simply not applicable.
"""
from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .rules import LESION, YES_NO, Ctx, Draft, RuleBase, centre, group, inside, lookup, organ_of, rule_kind


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
    one_organ: str = "multiple, in one organ"
    bilateral: str = "multiple, in both sides of a paired organ"
    several: str = "multiple, in different organs"


@rule_kind("distribution")
class Distribution(LesionRule):
    """Solitary; several lesions in one organ; in the left and right organ of a pair (lungs,
    kidneys); or in different organs. The four labels are mutually exclusive and all four are
    always offered, so the option set never hints at the answer."""

    kind: Literal["distribution"]
    labels: DistributionLabels = Field(default_factory=DistributionLabels)

    def derive(self, ctx, rng, n):
        L, organs = self.labels, [organ_of(b) for b in ctx.lesions]
        if not all(organs):
            return None
        distinct = set(organs)
        if len(organs) == 1:
            gold = L.solitary
        elif len(distinct) == 1:
            gold = L.one_organ
        elif len({group(o) for o in distinct}) == 1 and {o.split(" ", 1)[0] for o in distinct} == {"left", "right"}:
            gold = L.bilateral
        else:
            gold = L.several
        return Draft(gold, values=ctx.lesion_values(), options=[L.solitary, L.one_organ, L.bilateral, L.several],
                     evidence=tuple(b.id for b in ctx.lesions))


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


class Support(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    attribute: str
    value: str
    phrase: str | None = None      # default: phrases[attribute][value]


def _contradicts(supports: list, attrs: dict) -> bool:
    """The lesion shows none of the diagnosis's hallmarks and contradicts at least one of them."""
    known = [s for s in supports if attrs.get(s.attribute) is not None]
    return bool(known) and all(attrs.get(s.attribute) != s.value for s in known)


@rule_kind("rule_out")
class RuleOut(DiagnosisPools):
    """'Which diagnosis is least likely': every option is a diagnosis of the lesion's organ group;
    the answer is one whose imaging hallmark (``supports``) the lesion visibly contradicts (a cystic
    lesion rules out a necrotic carcinoma); the others are the true diagnosis and differentials the
    lesion does not contradict. Each contradicted diagnosis is a candidate (the balancer picks)."""

    kind: Literal["rule_out"]
    supports: dict[str, list[Support]] = Field(default_factory=dict)
    organs_by_region: dict[str, list[str]] = Field(default_factory=dict)   # kept for older definitions

    def candidates(self, ctx, rng, n):
        if ctx.index is None or not ctx.organ:
            return []
        gold = ctx.attrs.get("diagnosis")
        if not gold:
            return []
        key, same = self.same_group(ctx)
        bad = self.banned(ctx, gold) - {gold}
        pool = [d for d in dict.fromkeys(same) if d not in bad]
        ruled = [d for d in pool if d != gold and _contradicts(self.supports.get(d, ()), ctx.attrs)]
        kept = [gold] + [d for d in pool if d != gold and d not in ruled]
        if len(kept) < 2 and not ruled:
            return []
        # distractors: diagnoses the lesion does not contradict (the true one among them), at their
        # fair share (the balancer), so no diagnosis is a tell by being mostly the answer
        return [Draft(odd, values=ctx.lesion_values(), tiers=(kept,), evidence=(ctx.index.id,),
                      meta={"diagnosis": gold, "ruled_out": odd}) for odd in ruled]

    def derive(self, ctx, rng, n):
        found = self.candidates(ctx, rng, n)
        return found[0] if found else None


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


@rule_kind("supporting_finding")
class SupportingFinding(LesionRule):
    """Gold: the first ``supports[diagnosis]`` hallmark the lesion really shows, as a phrase.
    Distractors: hallmarks of other diagnoses (of the same organ group first) that the lesion does
    not show, phrased the same way, so every option is a hallmark of something and only the image
    tells which one is there. The question does not name the diagnosis (that would make it a
    knowledge question)."""

    kind: Literal["supporting_finding"]
    supports: dict[str, list[Support]] = Field(min_length=1)
    phrases: dict[str, dict[str, str]] = Field(min_length=1)   # 'attribute' or 'MOD:attribute' -> value -> phrase
    pools: dict[str, list[str]] = Field(default_factory=dict)  # diagnoses per organ group (as diagnosis rules)
    placeholders = LESION | {"diagnosis"}

    def phrase(self, ctx, s: Support) -> str | None:
        return s.phrase or (lookup(self.phrases, ctx.mod, s.attribute) or {}).get(s.value)

    def derive(self, ctx, rng, n):
        dx, a = ctx.attrs.get("diagnosis"), ctx.attrs
        hit = next((s for s in self.supports.get(dx, ()) if a.get(s.attribute) == s.value), None)
        if hit is None:
            return None
        gold = self.phrase(ctx, hit)
        if not gold:
            return None
        g = group(ctx.organ)
        same = lookup(self.pools, ctx.mod, g) or []
        others = [d for d in self.supports if d not in same]

        def absent(dxs):
            out = []
            for d in dxs:
                if d == dx:
                    continue
                for s in self.supports.get(d, ()):
                    p = self.phrase(ctx, s)
                    if p and p != gold and a.get(s.attribute) is not None and a.get(s.attribute) != s.value:
                        out.append(p)
            return list(dict.fromkeys(out))
        return Draft(gold, values=ctx.lesion_values(diagnosis=dx), tiers=(absent(same), absent(others)),
                     evidence=(ctx.index.id,), meta={"supporting_attribute": hit.attribute, "value": hit.value})


class LesionProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    labels: list[str] = Field(min_length=1)
    shapes: list[str] = Field(default_factory=list)
    margins: list[str] = Field(default_factory=list)
    densities: list[str] = Field(default_factory=list)
    weight: float = Field(1.0, gt=0)


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
    profiles: dict[str, list[LesionProfile]] = Field(
        default_factory=dict, description="'MOD:organ group' -> lesion types that occur there; false "
                                          "statements are drawn from these so that they read as plausibly as true ones")
    placeholders = frozenset({"statement"})
    answer_types = YES_NO

    def plausible_false(self, ctx, rng, true: dict, others: list[dict]) -> dict | None:
        """A description of a lesion type that occurs in this organ group (by its weight), wrong
        for this lesion in at least one attribute and not describing another lesion of the image."""
        types = lookup(self.profiles, ctx.mod, group(true["organ"])) or []
        if not types:
            return None
        weights = [t.weight for t in types]
        for _ in range(24):
            t = rng.choices(types, weights=weights)[0]
            d = {"label": rng.choice(t.labels), "organ": true["organ"]}
            for attr, values in (("shape", t.shapes), ("margin", t.margins), ("density", t.densities)):
                if attr in true and values:
                    d[attr] = rng.choice(values)
            if "size" in true:
                d["size"] = true["size"]
            if d.keys() == true.keys() and d != true and d not in others:
                return d
        return None

    def candidates(self, ctx, rng, n):
        if ctx.index is None or not ctx.organ:
            return []
        true = self.describe(ctx.index)
        others = [self.describe(b) for b in ctx.lesions if b is not ctx.index]
        ev = (ctx.index.id,)
        out = [self._draft(true, {"statement_true": True, "swapped": None}, ev)]
        false = self.plausible_false(ctx, rng, true, others)
        if false is not None:
            changed = {k: {"from": true[k], "to": v} for k, v in false.items() if true.get(k) != v}
            out.append(self._draft(false, {"statement_true": False, "swapped": changed}, ev))
        else:
            d = self.derive(ctx, random.Random(rng.random()), n)   # no profiles: swap one attribute
            if d is not None and d.gold == "no":
                out.append(d)
        return out

    def _draft(self, shown: dict, meta: dict, evidence: tuple) -> Draft:
        statement = self.sentence(shown)
        return Draft("yes" if meta["statement_true"] else "no", values={"statement": statement},
                     evidence=evidence, meta={**meta, "statement": statement})

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
