"""Synthetic CT/MR phantoms: lesion ground truth (boxes, sizes, vocabularies) and what the pixels
show of it (density, enhancement, rim, grade texture, margins)."""
from __future__ import annotations

from collections import Counter

import numpy as np

from annotation.phantoms import (
    CATALOGUE,
    ENHANCEMENTS,
    GRADES,
    SEVERITIES,
    generate_phantom,
    mask_box,
)
from annotation.phantoms.acquisition import severity_for
from annotation.phantoms.anatomy import blur
from annotation.phantoms.catalogue import organ_group
from tests.annotation.phantom_sample import lesion_pairs, sample

# --- lesion ground truth -----------------------------------------------------------------------

def test_lesion_boxes_are_tight_around_masks_and_inside_their_organ():
    n = 0
    for ph, lesion, mask in lesion_pairs():
        n += 1
        assert lesion.box == mask_box(mask)
        x0, y0, x1, y1 = lesion.box
        assert 0 <= x0 < x1 <= ph.width and 0 <= y0 < y1 <= ph.height
        assert lesion.organ in ph.organs
        organ_mask = ph.organ_masks[lesion.organ]
        assert not (mask & ~organ_mask).any(), "lesion leaks out of its organ"
        ox0, oy0, ox1, oy1 = ph.organs[lesion.organ]
        assert ox0 <= x0 and oy0 <= y0 and x1 <= ox1 and y1 <= oy1
        cx, cy = lesion.center
        assert x0 <= cx <= x1 and y0 <= cy <= y1
    assert n > 50


def test_lesions_never_overlap():
    for ph in sample():
        total = np.zeros((ph.height, ph.width), int)
        for m in ph.lesion_masks:
            total += m
        assert total.max() <= 1


def test_lesion_diameter_matches_box_and_shape():
    seen = Counter()
    for ph, lesion, _ in lesion_pairs():
        sp = ph.pixel_spacing_mm
        w, h = lesion.box[2] - lesion.box[0], lesion.box[3] - lesion.box[1]
        seen[lesion.shape] += 1
        seen[lesion.margin] += 1
        assert 0 < lesion.diameter_mm <= max(w, h) * sp + 0.05       # rounded to 0.1 mm
        if lesion.shape == "round":
            assert abs(w - h) <= 1
            assert abs(max(w, h) * sp - lesion.diameter_mm) <= sp + 0.05
        if lesion.margin == "spiculated":               # spicules reach beyond the measured core
            assert max(w, h) * sp > lesion.diameter_mm
        if lesion.label in ("nodule", "mass"):
            assert (lesion.label == "mass") == (lesion.diameter_mm >= 30) or lesion.diagnosis in (
                "squamous cell carcinoma", "glioblastoma")
    assert {"round", "oval", "lobulated", "irregular"} <= set(seen)
    assert {"well-defined", "ill-defined", "spiculated"} <= set(seen)


def test_lesion_contrast_matches_its_density_label():
    for ph, lesion, mask in lesion_pairs():
        px = ph.pixels.astype(float)
        any_lesion = np.any(ph.lesion_masks, axis=0)
        background = np.median(px[ph.organ_masks[lesion.organ] & ~any_lesion])
        inside = px[mask].mean()
        if lesion.density in ("hypodense", "hypointense"):
            assert inside < background, (ph.index, lesion)
        else:
            assert inside > background, (ph.index, lesion)
        assert lesion.density.endswith("dense") == (ph.modality == "CT")


def test_lesion_vocabularies():
    for _ph, lesion, _ in lesion_pairs():
        assert lesion.shape in ("round", "oval", "lobulated", "irregular")
        assert lesion.margin in ("well-defined", "ill-defined", "spiculated")
        assert lesion.composition in ("solid", "cystic", "mixed", "calcified")
        assert lesion.lesion_class in ("benign", "malignant")
        assert lesion.diagnosis and lesion.label


def test_lesion_attribute_vocabularies_and_balance():
    severity, grade, enhancement = Counter(), Counter(), Counter()
    for ph, lesion, _ in lesion_pairs():
        lt = next(t for t in CATALOGUE[(ph.modality, organ_group(lesion.organ))] if t.diagnosis == lesion.diagnosis)
        assert lesion.severity == severity_for(lesion.diameter_mm, lt.d_min, lt.d_max)
        severity[lesion.severity] += 1
        if lesion.lesion_class == "benign" or lesion.diagnosis == "glioblastoma":   # GBM is WHO grade 4
            assert lesion.grade is None
        else:
            assert lesion.grade in lt.grades
            grade[lesion.grade] += 1
        if ph.modality == "CT" and ph.contrast_phase != "non-contrast":
            assert lesion.enhancement in lt.enhancement
            enhancement[lesion.enhancement] += 1
            if lesion.composition in ("cystic", "calcified"):
                assert lesion.enhancement == "non-enhancing"
        else:
            assert lesion.enhancement is None
    for counts, vocab, lo in ((severity, SEVERITIES, 0.2), (grade, GRADES, 0.2), (enhancement, ENHANCEMENTS, 0.12)):
        total = sum(counts.values())
        assert set(counts) == set(vocab), counts
        assert all(lo <= v / total <= 0.5 for v in counts.values()), counts


def test_severity_follows_the_diameter_within_a_lesion_type():
    by = {}
    for ph, lesion, _ in lesion_pairs():
        by.setdefault((ph.modality, lesion.diagnosis, lesion.severity), []).append(lesion.diameter_mm)
    checked = 0
    for (mod, diag, sev), values in by.items():
        if sev == "mild" and (mod, diag, "severe") in by:
            assert max(values) < min(by[(mod, diag, "severe")])
            checked += 1
    assert checked >= 5


def test_enhancing_lesions_are_brighter_after_contrast_and_non_enhancing_ones_are_not():
    gain = {e: [] for e in ENHANCEMENTS}
    for p in sample():
        if p.modality != "CT" or not p.lesions:
            continue
        kw = dict(image_quality="no limiting artifact")
        nc = generate_phantom(p.index, contrast_phase="non-contrast", **kw)
        for phase in ("arterial phase", "portal venous phase"):
            ce = generate_phantom(p.index, contrast_phase=phase, **kw)
            assert [l.box for l in ce.lesions] == [l.box for l in nc.lesions]
            for k, lesion in enumerate(ce.lesions):
                if lesion.diameter_mm >= 8:
                    region = ce.lesion_masks[k]
                    if lesion.enhancement == "rim enhancement":     # the ring is what enhances
                        region = region & ~_erode(region, 2)
                    gain[lesion.enhancement].append(float(ce.pixels[region].astype(float).mean()
                                                          - nc.pixels[region].astype(float).mean()))
        if min(len(v) for v in gain.values()) >= 12:
            break
    med = {e: float(np.median(v)) for e, v in gain.items()}
    assert abs(med["non-enhancing"]) < 8, med
    for e in ("homogeneous enhancement", "rim enhancement", "heterogeneous enhancement"):
        assert med[e] > 12, med
        assert np.mean(np.array(gain[e]) > 5) > 0.85, (e, gain[e])


def _erode(m, n):
    for _ in range(n):
        m = m & np.roll(m, 1, 0) & np.roll(m, -1, 0) & np.roll(m, 1, 1) & np.roll(m, -1, 1)
    return m


def test_rim_enhancement_is_a_bright_ring_around_a_darker_centre():
    contrasts = {"rim enhancement": [], "homogeneous enhancement": []}
    for ph, lesion, mask in lesion_pairs():
        if lesion.enhancement in contrasts and lesion.diameter_mm >= 15:
            inner = _erode(mask, max(2, int(0.25 * lesion.diameter_mm / ph.pixel_spacing_mm)))
            if inner.sum() >= 6:
                px = ph.pixels.astype(float)
                contrasts[lesion.enhancement].append(px[mask & ~inner].mean() - px[inner].mean())
    assert len(contrasts["rim enhancement"]) >= 5
    assert np.median(contrasts["rim enhancement"]) > 15
    assert np.median(contrasts["rim enhancement"]) > np.median(contrasts["homogeneous enhancement"]) + 10


def test_higher_grade_lesions_are_more_heterogeneous():
    spread = {}
    for p in sample():
        if not any(lesion.grade for lesion in p.lesions):
            continue
        ph = generate_phantom(p.index, image_quality="no limiting artifact")   # texture, not artifacts
        smooth = blur(ph.pixels.astype(np.float32), 1.0)                       # lesion-scale, not pixel noise
        for lesion, mask in zip(ph.lesions, ph.lesion_masks):
            inner = _erode(mask, 3)
            if lesion.grade and lesion.composition == "solid" and inner.sum() >= 20 \
                    and lesion.enhancement in (None, "non-enhancing", "homogeneous enhancement"):
                spread.setdefault((ph.modality, lesion.grade), []).append(float(np.std(smooth[inner])))
    for mod in ("CT", "MR"):
        g1, g2, g3 = (np.median(spread[(mod, g)]) for g in GRADES)
        assert g1 < g2 < g3 and g3 > 2.5 * g1, (mod, g1, g2, g3)


def _shift_all(mask, op):
    out = mask.copy()
    for axis in (0, 1):
        for step in (1, -1):
            out = op(out, np.roll(mask, step, axis))
    return out


def test_ill_defined_margins_are_blurred_and_well_defined_are_sharp():
    def edge_sharpness(ph, lesion, mask):
        """Step across the border (1 px in vs 1 px out) relative to lesion-vs-organ contrast."""
        px = ph.pixels.astype(float)
        inner = mask & ~_shift_all(mask, np.logical_and)
        outer = _shift_all(mask, np.logical_or) & ~mask
        organ = np.median(px[ph.organ_masks[lesion.organ] & ~mask])
        contrast = px[mask & ~inner].mean() - organ if (mask & ~inner).sum() > 10 else 0.0
        return (px[inner].mean() - px[outer].mean()) / contrast if abs(contrast) > 15 else None

    def median_for(margin):
        vals = [edge_sharpness(*x) for x in lesion_pairs() if x[1].margin == margin and x[1].composition != "mixed"]
        return np.median([v for v in vals if v is not None])

    assert median_for("ill-defined") < 0.6 * median_for("well-defined")
