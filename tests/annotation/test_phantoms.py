"""Synthetic CT/MR phantoms: determinism, ground-truth geometry, DICOM encoding.

Plain pytest (no Django): python -m pytest tests/annotation/test_phantoms.py -p no:django
"""
from __future__ import annotations

import io
import json
from collections import Counter
from functools import lru_cache

import numpy as np
import pydicom
import pytest
from pydicom.pixels import apply_modality_lut
from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, MRImageStorage

from annotation.phantoms import (
    IMAGES_PER_PATIENT, Phantom, generate_phantom, generate_phantoms, mask_box, render_preview,
    write_phantoms,
)

N = 120  # phantoms of seed 0 shared by the tests below


@lru_cache(maxsize=None)
def sample() -> tuple[Phantom, ...]:
    return tuple(generate_phantoms(N, seed=0))


def lesion_pairs():
    for ph in sample():
        for lesion, mask in zip(ph.lesions, ph.lesion_masks):
            yield ph, lesion, mask


def first(modality: str, region: str, *, with_lesions: bool = False) -> Phantom:
    return next(p for p in sample() if (p.modality, p.body_region) == (modality, region)
                and (p.lesions or not with_lesions))


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
    assert set(counts) <= {0, 1, 2, 3}
    assert {0, 1, 2} <= set(counts)
    assert 0.10 <= counts[0] / N <= 0.45                    # ~25 % normal studies
    assert all(p.plane == "axial" for p in sample())


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
        assert a.instance_number == 1 and b.instance_number == 2
        assert read(a).StudyInstanceUID == read(b).StudyInstanceUID
    assert phs[0].patient_key == "PHANTOM-0000" and phs[7].patient_key == "PHANTOM-0003"
    assert phs[1].patient_key != phs[2].patient_key
    assert len({p.patient_key for p in phs}) == N // IMAGES_PER_PATIENT
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
        o = p.organs
        if p.body_region == "ABDOMEN":       # patient's right on image left
            assert _cx(o["liver"]) < _cx(o["spleen"])
            assert _cx(o["right kidney"]) < _cx(o["vertebra"]) < _cx(o["left kidney"])
            assert o["vertebra"][3] > o["aorta"][3]          # spine posterior to the aorta
        elif p.body_region == "CHEST":
            assert _cx(o["right lung"]) < _cx(o["heart"]) < _cx(o["left lung"])
            assert o["sternum"][1] < o["heart"][1] < o["vertebra"][1]
        else:
            b, s, v = o["brain"], o["skull"], o["lateral ventricles"]
            assert s[0] < b[0] < v[0] and v[2] < b[2] < s[2]


def test_ct_tissue_values_are_plausible_hounsfield_units():
    ab, ch, hd = first("CT", "ABDOMEN"), first("CT", "CHEST"), first("CT", "HEAD")
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


def test_mr_is_t2_like_with_a_window_from_its_intensities():
    mr = first("MR", "HEAD")
    px = mr.pixels.astype(float)
    csf, brain = np.median(px[mr.organ_masks["lateral ventricles"]]), np.median(px[mr.organ_masks["brain"]])
    assert csf > 1.8 * brain                                   # fluid bright on T2
    assert mr.acquisition == "T2-weighted"
    lo, hi = mr.window_center - mr.window_width / 2, mr.window_center + mr.window_width / 2
    assert lo < brain < hi and mr.window_width > 500


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
    for ph, lesion, _ in lesion_pairs():
        assert lesion.shape in ("round", "oval", "lobulated", "irregular")
        assert lesion.margin in ("well-defined", "ill-defined", "spiculated")
        assert lesion.composition in ("solid", "cystic", "mixed", "calcified")
        assert lesion.lesion_class in ("benign", "malignant")
        assert lesion.diagnosis and lesion.label


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
    assert set(les) == {"label", "organ", "box", "center", "diameter_mm", "shape", "margin", "density",
                        "composition", "lesion_class", "diagnosis"}


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
    ph = first("CT", "ABDOMEN")
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
