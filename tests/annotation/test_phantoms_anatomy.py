"""Synthetic CT/MR phantoms: anatomy (organ boxes, tissue values, contrast phases, MR sequences) and
acquisition (plane, image quality and phase: their balance, noise, motion, DICOM tags)."""
from __future__ import annotations

from collections import Counter

import numpy as np

from annotation.ingest import decode
from annotation.ingest.dicom import image_plane
from annotation.ingest.types import DecodeOptions
from annotation.phantoms import (
    CT_PHASES,
    IMAGE_QUALITIES,
    MR_SEQUENCES,
    PLANES,
    Phantom,
    generate_phantom,
    mask_box,
)
from annotation.phantoms.acquisition import phase_encode_axis
from annotation.phantoms.anatomy import blur
from annotation.phantoms.catalogue import LESION_ORGANS
from tests.annotation.phantom_sample import first, lesion_pairs, read, sample

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
        clean, noisy = (generate_phantom(index, image_quality=q)
                        for q in ("no limiting artifact", "excessive image noise"))
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
    options = DecodeOptions(uid_salt="t", max_pixels=10_000_000, max_file_bytes=50_000_000)
    for plane in PLANES:
        p = first("CT", "ABDOMEN", plane=plane)
        decoded = decode(p.to_dicom_bytes(), name=f"{plane}.dcm", options=options)
        assert decoded.metadata["plane"] == plane
