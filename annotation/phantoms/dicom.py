"""DICOM Part 10 encoding of a phantom (Explicit VR Little Endian, uncompressed).

The identifying tags are fake but present on purpose, so de-identification has work to do.
Bytes are a pure function of the phantom: UIDs come from generate_uid(entropy_srcs=...) and all
dates/times are derived from the seed and patient number (never from the clock).
"""
from __future__ import annotations

import datetime as dt
import io

import numpy as np
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.filewriter import dcmwrite
from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, MRImageStorage, generate_uid

from .catalogue import ENHANCED_PHASES, series_description

PRIVATE_GROUP, PRIVATE_CREATOR = 0x0011, "MEDR2 SYNTH"
IMPLEMENTATION_UID = generate_uid(entropy_srcs=["medr2-phantom-implementation"])


# row direction cosines, then column direction cosines (patient LPS): image left is the patient's right on
# axial and coronal images, anterior on sagittal ones; superior is at the top of coronal/sagittal ones
ORIENTATION = {"axial": (1, 0, 0, 0, 1, 0), "coronal": (1, 0, 0, 0, 0, -1), "sagittal": (0, 1, 0, 0, 0, -1)}
# (ScanningSequence, SequenceVariant, RepetitionTime, EchoTime, EchoTrainLength, FlipAngle) per region/sequence
MR_PARAMETERS = {
    ("HEAD", "T2-weighted"): ("SE", "SK", "4000", "95", "16", "90"),
    ("ABDOMEN", "T2-weighted"): ("SE", "SK", "1200", "90", "128", "90"),
    ("HEAD", "T1-weighted"): ("SE", "NONE", "550", "12", "1", "90"),
    ("ABDOMEN", "T1-weighted"): ("GR", "SP", "180", "4.6", "1", "70"),
}
CONTRAST_AGENT = "Iohexol 350 mgI/mL"


def _position(ph) -> list[str]:
    """Image Position (Patient): centre of the top-left pixel, the section at slice_location_mm."""
    sp = ph.pixel_spacing_mm
    half_w, half_h, loc = ph.width * sp / 2, ph.height * sp / 2, ph.slice_location_mm
    xyz = {"axial": (-half_w, -half_h, loc), "coronal": (-half_w, loc, half_h),
           "sagittal": (loc, -half_w, half_h)}[ph.plane]
    return [_ds(v) for v in xyz]


def _uid(ph, *parts) -> str:
    return generate_uid(entropy_srcs=["medr2-phantom", str(ph.seed), *map(str, parts)])


def phantom_uids(ph) -> dict[str, str]:
    n = ph.patient_number
    return {
        "study_instance_uid": _uid(ph, "study", n),
        "series_instance_uid": _uid(ph, "series", n, ph.modality, ph.body_region),
        "sop_instance_uid": _uid(ph, "sop", ph.index, ph.modality, ph.body_region),
        "frame_of_reference_uid": _uid(ph, "frame", n, ph.modality, ph.body_region),
    }


def _ds(v: float) -> str:
    s = f"{v:.6g}"
    return s if len(s) <= 16 else f"{v:.4f}"[:16]


def phantom_to_dicom(ph) -> bytes:
    uids = phantom_uids(ph)
    ct = ph.modality == "CT"
    n = ph.patient_number
    num = f"{n:04d}"
    study_date = dt.date(2023, 1, 2) + dt.timedelta(days=(n * 37 + ph.seed * 11) % 700)
    birth = dt.date(study_date.year - ph.patient_age, 1 + n % 12, 1 + n % 28)
    time = f"{8 + n % 10:02d}{(n * 7) % 60:02d}{(ph.instance_number * 13) % 60:02d}"

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = CTImageStorage if ct else MRImageStorage
    meta.MediaStorageSOPInstanceUID = uids["sop_instance_uid"]
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    meta.ImplementationClassUID = IMPLEMENTATION_UID
    meta.ImplementationVersionName = "MEDR2_PHANTOM1"

    ds = Dataset()
    ds.file_meta = meta
    ds.SpecificCharacterSet = "ISO_IR 100"
    reformat = ct and ph.plane != "axial"      # CT coronal/sagittal images are reformats of the axial volume
    ds.ImageType = (["DERIVED", "SECONDARY", "REFORMATTED"] if reformat
                    else ["ORIGINAL", "PRIMARY", "AXIAL" if ct else "OTHER"])
    ds.SOPClassUID = meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = uids["sop_instance_uid"]
    for kw in ("StudyDate", "SeriesDate", "AcquisitionDate", "ContentDate"):
        setattr(ds, kw, study_date.strftime("%Y%m%d"))
    for kw in ("StudyTime", "SeriesTime", "AcquisitionTime", "ContentTime"):
        setattr(ds, kw, time)
    ds.AccessionNumber = f"A{ph.seed % 100:02d}{n:07d}"
    ds.Modality = ph.modality
    ds.Manufacturer = "MedR2 Synthetic"
    ds.InstitutionName = "Synthetic General Hospital"
    ds.InstitutionAddress = "1 Phantom Way, Nowhere"
    ds.ReferringPhysicianName = "Referrer^Fake^Doctor"
    ds.StationName = "SYNTH01"
    ds.StudyDescription = f"{ph.modality} {ph.body_region}"
    ds.SeriesDescription = series_description(ph.modality, ph.body_region, ph.plane, ph.contrast_phase)
    ds.OperatorsName = "Operator^Fake"
    ds.ManufacturerModelName = "Phantom Scanner"
    ds.PatientName = f"Phantom^Patient^{num}"
    ds.PatientID = ph.patient_key
    ds.PatientBirthDate = birth.strftime("%Y%m%d")
    ds.PatientSex = ph.patient_sex
    ds.PatientAge = f"{ph.patient_age:03d}Y"
    ds.PatientAddress = f"{n + 1} Synthetic Street, Phantom City"
    ds.BodyPartExamined = ph.body_region
    ds.SliceThickness = _ds(ph.slice_thickness_mm)
    if ct:
        if ph.contrast_phase in ENHANCED_PHASES:
            ds.ContrastBolusAgent = CONTRAST_AGENT
            ds.ContrastBolusRoute = "IV"
            ds.ContrastBolusVolume = "90"
        ds.KVP = "120"
        ds.ConvolutionKernel = "STANDARD"
    else:
        seq, variant, tr, te, etl, flip = MR_PARAMETERS[(ph.body_region, ph.contrast_phase)]
        ds.ScanningSequence = seq
        ds.SequenceVariant = variant
        ds.MRAcquisitionType = "2D"
        ds.RepetitionTime = tr
        ds.EchoTime = te
        ds.EchoTrainLength = etl
        ds.FlipAngle = flip
        ds.MagneticFieldStrength = "1.5"
        ds.ImagedNucleus = "1H"
    ds.StudyInstanceUID = uids["study_instance_uid"]
    ds.SeriesInstanceUID = uids["series_instance_uid"]
    ds.StudyID = f"S{n:05d}"
    ds.SeriesNumber = (1 if ct else 2) + 10 * ("axial", "coronal", "sagittal").index(ph.plane)
    ds.InstanceNumber = ph.instance_number
    sp = ph.pixel_spacing_mm
    ds.ImagePositionPatient = _position(ph)
    ds.ImageOrientationPatient = [str(v) for v in ORIENTATION[ph.plane]]
    ds.FrameOfReferenceUID = uids["frame_of_reference_uid"]
    ds.PositionReferenceIndicator = ""
    ds.SliceLocation = _ds(ph.slice_location_mm)
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.Rows, ds.Columns = ph.height, ph.width
    ds.PixelSpacing = [_ds(sp), _ds(sp)]
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    ds.WindowCenter = _ds(ph.window_center)
    ds.WindowWidth = _ds(ph.window_width)
    ds.RescaleIntercept = "-1024" if ct else "0"
    ds.RescaleSlope = "1"
    ds.RescaleType = "HU" if ct else "US"
    block = ds.private_block(PRIVATE_GROUP, PRIVATE_CREATOR, create=True)
    block.add_new(0x01, "LO", f"phantom seed={ph.seed} index={ph.index}")
    block.add_new(0x02, "LO", f"{ph.patient_key} Phantom^Patient^{num}")   # PHI hiding in a private tag
    stored = ph.pixels.astype(np.int32) + (1024 if ct else 0)
    ds.PixelData = np.clip(stored, 0, 4095).astype("<u2").tobytes()
    buf = io.BytesIO()
    dcmwrite(buf, ds, enforce_file_format=True)
    return buf.getvalue()
