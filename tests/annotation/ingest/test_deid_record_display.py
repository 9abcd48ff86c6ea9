"""The de-identification record as the image page shows it (annotation/ingest/deid_profile.describe_record):
what each action did and to which attributes, never a Python dict."""
from __future__ import annotations

from annotation.ingest.deid_profile import PROFILE_NAME, PROFILE_REVISION, describe_record


def test_a_dicom_record_reads_as_one_row_per_action():
    record = {"profile": PROFILE_NAME, "profile_revision": PROFILE_REVISION,
              "method": "Med-R2 Studio\\PS3.15 Annex E Basic Application Level Confidentiality Profile",
              "counts": {"removed": 2, "emptied": 1, "dummied": 0, "uids_remapped": 3, "private_removed": 0,
                         "curves_overlays_removed": 0, "file_meta_removed": 1},
              "keywords": {"X": ["PatientAddress", "PatientAge"], "Z": ["PatientName"], "D": [],
                           "U": ["SOPInstanceUID"]},
              "preamble_cleared": True}
    rows = dict(describe_record(record))
    assert rows["Profile"] == f"{PROFILE_NAME} (DICOM {PROFILE_REVISION})"
    assert rows["Method recorded in the file"] == ("Med-R2 Studio; PS3.15 Annex E Basic Application Level "
                                                   "Confidentiality Profile")
    assert rows["Attributes removed"] == "2" and rows["UIDs replaced (consistently across the series)"] == "3"
    assert rows["Which were removed"] == "PatientAddress, PatientAge" and rows["Which were emptied"] == "PatientName"
    assert "Which got a dummy value" not in rows and rows["File preamble cleared"] == "yes"
    assert not any(c in text for text in rows.values() for c in ("{", "[", "True"))


def test_a_nifti_record_and_unknown_keys_read_too():
    rows = dict(describe_record({"profile": "Med-R2 Studio NIfTI header scrub", "blanked_fields": [],
                                 "extensions_removed": 1, "new_step": {"done": True}}))
    assert rows == {"Profile": "Med-R2 Studio NIfTI header scrub", "Header text fields blanked": "none had text",
                    "Header extensions removed": "1", "New step · done": "yes"}
    assert describe_record({}) == []
