"""Synthetic CT/MR phantoms: determinism, ground-truth geometry, DICOM encoding.

No database needed (pure numpy/pydicom); the -p no:django shortcut no longer works since tests/conftest.py imports Django.
"""
from __future__ import annotations

import io
import json
from collections import Counter
from functools import cache

import numpy as np
import pydicom
import pytest
from pydicom.pixels import apply_modality_lut
from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, MRImageStorage

from annotation.ingest.dicom import image_plane
from annotation.phantoms import (
    CATALOGUE,
    CT_PHASES,
    ENHANCEMENTS,
    GRADES,
    IMAGE_QUALITIES,
    IMAGES_PER_PATIENT,
    MR_SEQUENCES,
    PLANES,
    SEVERITIES,
    Phantom,
    generate_phantom,
    generate_phantoms,
    mask_box,
    render_preview,
    write_phantoms,
)
from annotation.phantoms.acquisition import phase_encode_axis, severity_for
from annotation.phantoms.anatomy import blur
from annotation.phantoms.catalogue import LESION_ORGANS, organ_group

N = 300  # phantoms of seed 0 shared by the tests below


@cache
def sample() -> tuple[Phantom, ...]:
    return tuple(generate_phantoms(N, seed=0))


def lesion_pairs():
    for ph in sample():
        for lesion, mask in zip(ph.lesions, ph.lesion_masks):
            yield ph, lesion, mask


def first(modality: str, region: str, *, with_lesions: bool = False, plane: str | None = None,
          phase: str | None = None, quality: str | None = None) -> Phantom:
    return next(p for p in sample() if (p.modality, p.body_region) == (modality, region)
                and (p.lesions or not with_lesions) and plane in (None, p.plane)
                and phase in (None, p.contrast_phase) and quality in (None, p.image_quality))


def read(ph: Phantom) -> pydicom.Dataset:
    return pydicom.dcmread(io.BytesIO(ph.to_dicom_bytes()))


# --- determinism --------------------------------------------------------------------------------

def test_same_seed_and_index_give_identical_pixels_truth_and_dicom_bytes():
    a, b = generate_phantom(7, seed=3), generate_phantom(7, seed=3)
    assert np.array_equal(a.pixels, b.pixels)
    assert a.pixels.dtype == b.pixels.dtype
    assert a.ground_truth() == b.ground_truth()
    assert a.to_dicom_bytes() == b.to_dicom_bytes()
    assert all(np.array_equal(x, y) for x, y in zip(a.lesion_masks, b.lesion_masks))


def test_different_seed_or_index_gives_different_phantoms():
    base = generate_phantom(7, seed=3)
    other_seed = generate_phantom(7, seed=4)
    other_index = generate_phantom(6, seed=3)    # same patient, other image
    for other in (other_seed, other_index):
        assert other.pixels.shape != base.pixels.shape or not np.array_equal(other.pixels, base.pixels)
        assert other.to_dicom_bytes() != base.to_dicom_bytes()
    assert other_seed.patient_key != base.patient_key        # seeds never share patients


def test_streaming_matches_single_generation():
    stream = generate_phantoms(4, seed=2, start=10)
    assert iter(stream) is stream                            # a generator, not a list
    for i, ph in zip(range(10, 14), stream):
        assert ph.index == i and np.array_equal(ph.pixels, generate_phantom(i, seed=2).pixels)


def test_modality_override_and_validation():
    for i in range(6):
        assert generate_phantom(i, modality="mr").modality == "MR"
        ct = generate_phantom(i, modality="CT")
        assert ct.modality == "CT" and ct.pixels.dtype == np.int16
    with pytest.raises(ValueError):
        generate_phantom(0, modality="US")
    with pytest.raises(ValueError):
        generate_phantom(-1)


# --- the mix --------------------------------------------------------------------------------

def test_mix_covers_modalities_regions_and_normal_studies():
    kinds = Counter((p.modality, p.body_region) for p in sample())
    assert set(kinds) == {("CT", "ABDOMEN"), ("CT", "CHEST"), ("CT", "HEAD"), ("MR", "HEAD"), ("MR", "ABDOMEN")}
    counts = Counter(len(p.lesions) for p in sample())
    assert set(counts) == {0, 1, 2, 3}
    assert 0.38 <= counts[0] / N <= 0.58                    # about half the studies are normal
    abnormal = N - counts[0]
    for k in (1, 2, 3):                                     # 1 / 2 / 3 lesions closer to even
        assert 0.2 <= counts[k] / abnormal <= 0.45, counts


def test_images_are_non_square_with_modality_dtypes():
    sizes = {(p.width, p.height) for p in sample()}
    assert len(sizes) >= 3
    for p in sample():
        assert p.width != p.height
        assert p.pixels.shape == (p.height, p.width)
        assert p.pixels.dtype == (np.int16 if p.modality == "CT" else np.uint16)
        assert 0.3 < p.pixel_spacing_mm < 2.0


def test_patients_own_consecutive_images_of_one_study():
    phs = sample()
    for a, b in zip(phs[0::2], phs[1::2]):
        assert a.patient_key == b.patient_key
        assert (a.modality, a.body_region, a.width, a.height) == (b.modality, b.body_region, b.width, b.height)
        assert (a.plane, a.contrast_phase, a.pixel_spacing_mm) == (b.plane, b.contrast_phase, b.pixel_spacing_mm)
        assert a.instance_number == 1 and b.instance_number == 2
        assert read(a).StudyInstanceUID == read(b).StudyInstanceUID
    assert phs[0].patient_key == "PHANTOM-0000" and phs[7].patient_key == "PHANTOM-0003"
    assert phs[1].patient_key != phs[2].patient_key
    assert len({p.patient_key for p in phs}) == N // IMAGES_PER_PATIENT
    assert any(a.image_quality != b.image_quality for a, b in zip(phs[0::2], phs[1::2]))   # drawn per image
    uids = [p.ground_truth()["uids"] for p in phs[:20]]
    assert len({u["sop_instance_uid"] for u in uids}) == 20
    assert uids[0]["study_instance_uid"] != uids[2]["study_instance_uid"]


# --- anatomy ---------------------------------------------------------------------------------

def _cx(box):
    return (box[0] + box[2]) / 2


def test_organ_boxes_are_tight_inside_the_body_and_radiologically_placed():
    for p in sample():
        container = p.organs["head" if p.body_region == "HEAD" else "body"]
        assert set(p.organs) == set(p.organ_masks)
        for name, box in p.organs.items():
            assert box == mask_box(p.organ_masks[name]), name
            x0, y0, x1, y1 = box
            assert 0 <= x0 < x1 <= p.width and 0 <= y0 < y1 <= p.height
            assert container[0] <= x0 and container[1] <= y0 and x1 <= container[2] and y1 <= container[3]
        o, region, plane = p.organs, p.body_region, p.plane
        if plane in ("axial", "coronal"):      # patient's right on image left
            if region == "ABDOMEN":
                assert _cx(o["liver"]) < _cx(o["spleen"])
                assert _cx(o["right kidney"]) < _cx(o["body"]) < _cx(o["left kidney"])
            elif region == "CHEST":
                assert _cx(o["right lung"]) < _cx(o["heart"]) < _cx(o["left lung"])
            else:
                b, s, v = o["brain"], o["skull"], o["lateral ventricles"]
                assert s[0] < b[0] < v[0] and v[2] < b[2] < s[2]
        if plane == "axial":
            if region == "ABDOMEN":
                assert o["vertebra"][3] > o["aorta"][3]          # spine posterior to the aorta
            elif region == "CHEST":
                assert o["sternum"][1] < o["heart"][1] < o["vertebra"][1]
        elif plane == "coronal":                # superior at the top
            if region == "ABDOMEN":
                assert o["liver"][1] < o["right kidney"][1] and o["spleen"][1] < o["left kidney"][1]
            elif region == "CHEST":
                assert o["right lung"][1] < o["liver"][1] and o["aorta"][1] < o["heart"][1]
            else:
                assert o["brain"][1] < o["cerebellum"][1] < o["brainstem"][3]
        else:                                   # sagittal: one side only, anterior on image left
            pairs = [n for n in o if n.split()[0] in ("right", "left")]
            assert len({n.split()[0] for n in pairs}) <= 1, pairs
            if region == "ABDOMEN":
                assert ("liver" in o) != ("spleen" in o)
                kidney = "right kidney" if "liver" in o else "left kidney"
                assert _cx(o[kidney]) > _cx(o["liver" if "liver" in o else "stomach"])   # kidney posterior
            elif region == "CHEST":
                assert ("right lung" in o) != ("left lung" in o)
                if "heart" in o:
                    assert _cx(o["heart"]) < _cx(o["aorta"])    # heart anterior to the descending aorta
            else:
                assert _cx(o["cerebellum"]) > _cx(o["lateral ventricles"])   # posterior fossa
                assert o["brain"][1] < o["cerebellum"][1]


def test_every_plane_of_every_region_shows_an_organ_that_can_carry_lesions():
    seen = Counter()
    for p in sample():
        seen[(p.body_region, p.plane)] += 1
        assert any(p.organ_masks[o].sum() > 200 for o, _ in LESION_ORGANS[p.body_region] if o in p.organ_masks)
    assert set(seen) == {(r, pl) for r in ("ABDOMEN", "CHEST", "HEAD") for pl in PLANES}
    lesion_planes = Counter(ph.plane for ph, _, _ in lesion_pairs())
    assert set(lesion_planes) == set(PLANES)


def test_ct_tissue_values_are_plausible_hounsfield_units():
    nc = dict(phase="non-contrast", plane="axial", quality="no limiting artifact")
    ab, ch, hd = first("CT", "ABDOMEN", **nc), first("CT", "CHEST", **nc), first("CT", "HEAD", **nc)
    air = ab.pixels[~ab.organ_masks["body"]]
    assert abs(np.median(air) + 1000) < 30
    assert 45 < np.median(ab.pixels[ab.organ_masks["liver"]]) < 75
    assert ab.pixels[ab.organ_masks["vertebra"]].max() > 500
    assert np.median(ch.pixels[ch.organ_masks["right lung"]]) < -700
    assert 20 < np.median(hd.pixels[hd.organ_masks["brain"]]) < 45
    assert np.median(hd.pixels[hd.organ_masks["skull"]]) > 500
    assert (ab.window_center, ab.window_width) == (40.0, 400.0)
    assert (ch.window_center, ch.window_width) == (-600.0, 1500.0)
    assert (hd.window_center, hd.window_width) == (40.0, 80.0)
    for p in sample():                          # lungs stay air-filled in every plane and phase
        for lung in ("right lung", "left lung"):
            if p.modality == "CT" and lung in p.organ_masks:
                assert np.median(p.pixels[p.organ_masks[lung]]) < -600


def test_contrast_phases_enhance_vessels_and_organs():
    for index in (16, 22, 14):                  # axial abdomen, coronal abdomen, axial chest
        nc, art, pv = (generate_phantom(index, contrast_phase=ph, image_quality="no limiting artifact")
                       for ph in CT_PHASES)
        aorta = [np.median(p.pixels[p.organ_masks["aorta"]]) for p in (nc, art, pv)]
        assert aorta[0] < 80 and aorta[1] > 250 and 120 < aorta[2] < aorta[1], aorta
        if "liver" in nc.organ_masks:
            liver = [np.median(p.pixels[p.organ_masks["liver"]]) for p in (nc, art, pv)]
            assert liver[0] < liver[1] < liver[2] and liver[2] - liver[0] > 35, liver
    for p in sample():              # (a motion ghost of the lung can darken the aorta: left out)
        if p.modality == "CT" and "aorta" in p.organ_masks and p.organ_masks["aorta"].sum() > 30 \
                and p.image_quality != "motion artifact":
            bright = np.median(p.pixels[p.organ_masks["aorta"]]) > 110
            assert bright == (p.contrast_phase != "non-contrast"), (p.index, p.contrast_phase)


def test_mr_t2_and_t1_are_told_apart_by_fluid_and_fat():
    for index in (62, 30, 6):                   # MR head: axial, coronal, sagittal
        t2, t1 = (generate_phantom(index, contrast_phase=s, image_quality="no limiting artifact")
                  for s in ("T2-weighted", "T1-weighted"))
        ratio = {}
        for name, p in (("T2", t2), ("T1", t1)):
            px = p.pixels.astype(float)
            csf = np.median(px[p.organ_masks["lateral ventricles"]])
            ratio[name] = csf / np.median(px[p.organ_masks["brain"]])
        assert ratio["T2"] > 1.8 and ratio["T1"] < 0.5, ratio          # fluid bright on T2, dark on T1
        lo, hi = t1.window_center - t1.window_width / 2, t1.window_center + t1.window_width / 2
        assert lo < np.median(t1.pixels[t1.organ_masks["brain"]]) < hi and t1.window_width > 500
    mr = first("MR", "HEAD", phase="T2-weighted")
    assert mr.contrast_phase == mr.acquisition == "T2-weighted"
    for p in sample():
        if p.modality == "MR":
            assert p.contrast_phase in MR_SEQUENCES
        else:
            assert p.contrast_phase in CT_PHASES


# --- acquisition: plane, quality, phase -------------------------------------------------------------

def test_plane_quality_and_phase_each_occur_about_evenly():
    def shares(values):
        c = Counter(values)
        return {k: v / len(values) for k, v in c.items()}
    planes = shares([p.plane for p in sample()])
    assert set(planes) == set(PLANES) and all(0.22 <= v <= 0.45 for v in planes.values()), planes
    quality = shares([p.image_quality for p in sample()])
    assert set(quality) == set(IMAGE_QUALITIES) and all(0.25 <= v <= 0.42 for v in quality.values()), quality
    ct = shares([p.contrast_phase for p in sample() if p.modality == "CT"])
    assert set(ct) == set(CT_PHASES) and all(0.22 <= v <= 0.45 for v in ct.values()), ct
    mr = shares([p.contrast_phase for p in sample() if p.modality == "MR"])
    assert set(mr) == set(MR_SEQUENCES) and all(0.3 <= v <= 0.7 for v in mr.values()), mr


def _flat_interior(p: Phantom) -> np.ndarray:
    """Inside the largest solid organ (lungs have vessels), away from its edges and from every lesion."""
    candidates = ("heart", "liver") if p.body_region == "CHEST" else [o for o, _ in LESION_ORGANS[p.body_region]]
    organ = max((o for o in candidates if o in p.organ_masks), key=lambda o: p.organ_masks[o].sum())
    m = p.organ_masks[organ]
    for lm in p.lesion_masks:
        m = m & ~lm
    for _ in range(3):
        m = m & np.roll(m, 1, 0) & np.roll(m, -1, 0) & np.roll(m, 1, 1) & np.roll(m, -1, 1)
    return m


def _noise(p: Phantom) -> float:
    """Median absolute difference of neighbouring pixels: the noise, robust to the few tissue edges."""
    px = p.pixels.astype(np.float32)
    d = np.abs(np.diff(px, axis=1))
    return float(np.median(d[_flat_interior(p)[:, 1:]]))


def test_excessive_image_noise_is_visibly_noisier():
    for index in (16, 14, 34, 62, 0, 2, 46):
        clean, noisy = (generate_phantom(index, image_quality=q) for q in ("no limiting artifact", "excessive image noise"))
        assert [l.box for l in clean.lesions] == [l.box for l in noisy.lesions]    # same phantom otherwise
        assert _noise(noisy) > 2.2 * _noise(clean), index
    by = {}                                     # and across the sample, per modality and region
    for p in sample():
        by.setdefault((p.modality, p.body_region, p.image_quality), []).append(_noise(p))
    for (mod, region, quality), values in by.items():
        if quality == "excessive image noise":
            normal = by[(mod, region, "no limiting artifact")]
            assert min(values) > max(normal), (mod, region)


def _sharpness(p: Phantom, axis: int) -> float:
    """99th percentile (the strongest edges) of the smoothed gradient along `axis` inside the body."""
    sm = blur(p.pixels.astype(np.float32), 1.2)
    g = np.abs(np.diff(sm, axis=axis))
    m = p.organ_masks["head" if p.body_region == "HEAD" else "body"]
    m = m[:-1] if axis == 0 else m[:, :-1]
    return float(np.percentile(g[m], 99))


def test_motion_artifact_blurs_and_ghosts_along_the_phase_encode_direction():
    for index in (16, 22, 2, 14, 34, 46, 62, 0, 6):
        clean, moved = (generate_phantom(index, image_quality=q) for q in ("no limiting artifact", "motion artifact"))
        axis = phase_encode_axis(clean.plane, clean.body_region)
        along = _sharpness(moved, axis) / _sharpness(clean, axis)
        across = _sharpness(moved, 1 - axis) / _sharpness(clean, 1 - axis)
        assert along < 0.85 * across, (index, along, across)      # edges smeared along one direction only
        body = clean.organ_masks["head" if clean.body_region == "HEAD" else "body"]
        diff = np.abs(moved.pixels.astype(float) - clean.pixels.astype(float))[body]
        assert diff.mean() > 1.5 * _noise(clean), index        # far more than the noise it shares
        if clean.modality == "MR":              # ghosts of the body across the empty field of view
            out = ~clean.organ_masks["head" if clean.body_region == "HEAD" else "body"]
            assert moved.pixels[out].mean() > 1.5 * clean.pixels[out].mean(), index


def test_dicom_plane_and_acquisition_tags_match_the_ground_truth():
    seen = Counter()
    for p in sample()[:90]:
        ds = read(p)
        assert image_plane(ds.ImageOrientationPatient) == p.plane == p.ground_truth()["plane"]
        seen[p.plane] += 1
        if p.modality == "CT":
            enhanced = p.contrast_phase != "non-contrast"
            assert ("ContrastBolusAgent" in ds) == enhanced
            assert ds.SeriesDescription.endswith({"non-contrast": " NC", "arterial phase": " ART",
                                                  "portal venous phase": " PV"}[p.contrast_phase])
        else:
            t1 = p.contrast_phase == "T1-weighted"
            assert "ContrastBolusAgent" not in ds
            assert (float(ds.RepetitionTime) < 800) == t1 and (float(ds.EchoTime) < 20) == t1
            assert ds.ScanningSequence in ("SE", "GR") and ("T1" in ds.SeriesDescription) == t1
        assert ds.SeriesDescription.split()[0] == {"axial": "AX", "coronal": "COR", "sagittal": "SAG"}[p.plane]
        row, col = np.array(ds.ImageOrientationPatient[:3], float), np.array(ds.ImageOrientationPatient[3:], float)
        if p.plane in ("axial", "coronal"):     # image left is the patient's right (LPS: +x is left)
            assert row[0] == 1
        if p.plane != "axial":                  # superior at the top (LPS: +z is superior)
            assert col[2] == -1
    assert set(seen) == set(PLANES)


def test_ingest_records_the_plane_from_the_dicom(tmp_path):
    from annotation.ingest import decode
    from annotation.ingest.types import DecodeOptions
    options = DecodeOptions(uid_salt="t", max_pixels=10_000_000, max_file_bytes=50_000_000)
    for plane in PLANES:
        p = first("CT", "ABDOMEN", plane=plane)
        decoded = decode(p.to_dicom_bytes(), name=f"{plane}.dcm", options=options)
        assert decoded.metadata["plane"] == plane


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


# --- DICOM -----------------------------------------------------------------------------------------

KINDS = [("CT", "ABDOMEN"), ("CT", "CHEST"), ("CT", "HEAD"), ("MR", "HEAD"), ("MR", "ABDOMEN")]


@pytest.mark.parametrize("kind", KINDS)
def test_dicom_round_trip_recovers_the_pixels_through_the_modality_lut(kind):
    ph = first(*kind)
    raw = ph.to_dicom_bytes()
    assert raw[128:132] == b"DICM" and raw[:128] == bytes(128)
    ds = pydicom.dcmread(io.BytesIO(raw))
    assert ds.file_meta.TransferSyntaxUID == ExplicitVRLittleEndian
    assert ds.SOPClassUID == (CTImageStorage if ph.modality == "CT" else MRImageStorage)
    assert ds.file_meta.MediaStorageSOPInstanceUID == ds.SOPInstanceUID
    assert ds.Modality == ph.modality and ds.BodyPartExamined == ph.body_region
    assert (ds.Rows, ds.Columns) == (ph.height, ph.width)
    assert [float(v) for v in ds.PixelSpacing] == [ph.pixel_spacing_mm] * 2
    assert float(ds.WindowCenter) == ph.window_center and float(ds.WindowWidth) == ph.window_width
    assert float(ds.RescaleSlope) == 1 and float(ds.SliceThickness) > 0
    values = apply_modality_lut(ds.pixel_array, ds)
    assert np.array_equal(values, ph.pixels.astype(values.dtype))


def test_dicom_carries_fake_identifiers_for_deidentification():
    ph = sample()[7]
    ds = read(ph)
    assert str(ds.PatientName) == "Phantom^Patient^0003"
    assert ds.PatientID == ph.patient_key == "PHANTOM-0003"
    for keyword in ("PatientBirthDate", "InstitutionName", "AccessionNumber", "ReferringPhysicianName",
                    "StudyDate", "StudyTime", "PatientAddress", "OperatorsName"):
        assert str(ds.data_element(keyword).value), keyword
    assert ds.InstitutionName == "Synthetic General Hospital"
    assert ds[0x0011, 0x0010].value == "MEDR2 SYNTH"
    assert ph.patient_key in ds[0x0011, 0x1002].value
    assert ds.StudyDate.isdigit() and len(ds.StudyDate) == 8
    for uid in (ds.StudyInstanceUID, ds.SeriesInstanceUID, ds.SOPInstanceUID, ds.FrameOfReferenceUID):
        assert uid.is_valid


def test_dicom_uids_are_deterministic_and_match_the_ground_truth():
    a, b = read(generate_phantom(3, seed=9)), read(generate_phantom(3, seed=9))
    assert a.SOPInstanceUID == b.SOPInstanceUID
    assert read(generate_phantom(3, seed=10)).SOPInstanceUID != a.SOPInstanceUID
    uids = generate_phantom(3, seed=9).ground_truth()["uids"]
    assert uids["sop_instance_uid"] == a.SOPInstanceUID and uids["study_instance_uid"] == a.StudyInstanceUID


# --- ground truth files, preview ------------------------------------------------------------------

def test_ground_truth_is_json_and_mirrors_the_phantom():
    ph = next(p for p in sample() if len(p.lesions) >= 2)
    gt = json.loads(json.dumps(ph.ground_truth()))
    assert "pixels" not in gt
    for key in ("index", "seed", "modality", "body_region", "plane", "patient_key", "width", "height",
                "pixel_spacing_mm", "window_center", "window_width"):
        assert gt[key] == getattr(ph, key)
    assert gt["organs"] == {k: list(v) for k, v in ph.organs.items()}
    assert gt["abnormal"] is True and gt["lesion_count"] == len(ph.lesions)
    les = gt["lesions"][0]
    assert les["box"] == list(ph.lesions[0].box) and les["diagnosis"] == ph.lesions[0].diagnosis
    base = {"label", "organ", "box", "center", "diameter_mm", "shape", "margin", "density", "composition",
            "lesion_class", "diagnosis", "severity"}
    for p in sample():
        gt = p.ground_truth()
        assert gt["plane"] == p.plane and gt["image_quality"] == p.image_quality
        assert gt["contrast_phase"] == p.contrast_phase
        for les, lesion in zip(gt["lesions"], p.lesions):
            extra = set(les) - base
            assert base <= set(les) and extra <= {"enhancement", "grade"}
            assert ("enhancement" in les) == (p.modality == "CT" and p.contrast_phase != "non-contrast")
            assert ("grade" in les) == (lesion.grade is not None)


def test_write_phantoms_writes_dicom_and_json_pairs(tmp_path):
    paths = write_phantoms(tmp_path / "out", 3, seed=5)
    assert [p.name for p in paths] == ["phantom-00000.dcm", "phantom-00001.dcm", "phantom-00002.dcm"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        [p.name for p in paths] + [p.with_suffix(".json").name for p in paths])
    for i, path in enumerate(paths):
        ph = generate_phantom(i, seed=5)
        assert path.read_bytes() == ph.to_dicom_bytes()
        assert json.loads(path.with_suffix(".json").read_text()) == json.loads(json.dumps(ph.ground_truth()))


def test_render_preview_is_windowed_8bit():
    ph = first("CT", "ABDOMEN", plane="axial", phase="non-contrast")
    im = render_preview(ph)
    assert im.mode == "L" and im.size == (ph.width, ph.height)
    a = np.asarray(im)
    assert a[~ph.organ_masks["body"]].mean() < 5                 # air black
    assert np.median(a[ph.organ_masks["vertebra"]]) > 200        # bone white
    assert 100 < np.median(a[ph.organ_masks["liver"]]) < 190      # soft tissue grey


def test_many_phantoms_stream_without_errors():
    """Speed sanity without a timing assert: a few hundred phantoms, all distinct."""
    seen = set()
    for ph in generate_phantoms(100, seed=11):
        seen.add(ph.pixels[::17, ::13].tobytes())
    assert len(seen) == 100
