"""Synthetic CT/MR phantoms: determinism, the mix of studies, DICOM encoding, ground-truth files."""
from __future__ import annotations

import io
import json
from collections import Counter

import numpy as np
import pydicom
import pytest
from pydicom.pixels import apply_modality_lut
from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, MRImageStorage

from annotation.phantoms import IMAGES_PER_PATIENT, generate_phantom, generate_phantoms, render_preview, write_phantoms
from tests.annotation.phantom_sample import N, first, read, sample

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
