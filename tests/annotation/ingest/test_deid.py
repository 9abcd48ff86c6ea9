"""DICOM de-identification (PS3.15 Annex E basic profile), checked tag by tag on real files."""
from __future__ import annotations

import copy
import hashlib
import io
import json

import pydicom
import pytest
from pydicom.data import get_testdata_file
from pydicom.dataset import Dataset
from pydicom.sequence import Sequence

from annotation.ingest import DecodeOptions, decode, deid_profile
from annotation.ingest.dicom import DEID_METHOD, DUMMY_BY_VR, deidentify, remap_uid, split_key

SALT = "test-salt"
OPTIONS = DecodeOptions(uid_salt=SALT)
# UIDs that name a type, not an instance: kept (K) by the profile.
TYPE_UIDS = {"SOPClassUID", "MediaStorageSOPClassUID", "TransferSyntaxUID", "ImplementationClassUID"}


def _bytes(name: str) -> bytes:
    with open(get_testdata_file(name), "rb") as fh:
        return fh.read()


def _read(data: bytes) -> Dataset:
    return pydicom.dcmread(io.BytesIO(data))


def _decode(data: bytes, options: DecodeOptions = OPTIONS):
    source = decode(data, name="x.dcm", options=options)
    return source, _read(source.stored_bytes)


def _all_uid_values(ds: Dataset) -> set[str]:
    values = set()
    for elem in ds.iterall():
        if elem.VR == "UI" and elem.keyword not in TYPE_UIDS and elem.value:
            values.update(str(v) for v in (elem.value if elem.VM > 1 else [elem.value]))
    return values


@pytest.mark.parametrize("filename", ["CT_small.dcm", "MR_small.dcm"])
def test_every_original_attribute_gets_its_profile_action(filename):
    original = _read(_bytes(filename))
    _, clean = _decode(_bytes(filename))
    checked = 0
    for elem in original:
        tag = int(elem.tag)
        if elem.tag.is_private:
            assert tag not in clean, f"private {elem.tag} kept"
            continue
        action = deid_profile.action_for(tag)
        if action == "X":
            assert tag not in clean, f"{elem.keyword} should be removed"
        elif action == "Z":
            assert clean[tag].is_empty, f"{elem.keyword} should be empty"
        elif action == "D":
            expected = elem.value if elem.is_empty else DUMMY_BY_VR[elem.VR]
            if elem.VR == "SQ":
                expected = []
            assert clean[tag].value == expected, f"{elem.keyword} should hold the dummy"
        elif action == "U":
            assert clean[tag].value == remap_uid(str(elem.value), SALT)
            assert clean[tag].value != elem.value
        elif elem.VR != "SQ":
            assert clean[tag].value == elem.value, f"{elem.keyword} should be kept"
        checked += 1
    assert checked > 30


def test_ct_small_identifying_attributes_are_blanked_or_dummied():
    _, clean = _decode(_bytes("CT_small.dcm"))
    assert clean.PatientName == ""                # Z
    assert clean.PatientID == "ANONYMOUS"         # Z/D -> D
    assert clean.PatientBirthDate == ""           # Z
    assert clean.PatientSex == ""                 # Z
    assert "OtherPatientIDsSequence" not in clean  # X
    assert "PatientAge" not in clean and "PatientWeight" not in clean  # X
    assert clean.InstitutionName == "ANONYMOUS"   # X/Z/D -> D
    assert clean.StationName == "ANONYMOUS"       # X/Z/D -> D
    assert clean.StudyDate == "" and clean.StudyTime == ""  # Z
    assert clean.SeriesDate == "19000101" and clean.ContentDate == "19000101"  # X/D, Z/D -> D
    assert clean.AcquisitionDate == ""            # X/Z -> Z
    assert clean.StudyID == ""                    # Z
    assert "ImageComments" not in clean and "TimezoneOffsetFromUTC" not in clean
    assert "StudyDescription" not in clean        # X
    assert "SourceApplicationEntityTitle" not in clean.file_meta
    assert (0xFFFC, 0xFFFC) not in clean           # Data Set Trailing Padding, X
    # technical attributes stay
    assert clean.Modality == "CT" and clean.Manufacturer == "GE MEDICAL SYSTEMS"
    assert clean.Rows == 128 and float(clean.RescaleIntercept) == -1024


def test_mr_small_operator_reader_and_device_serial_are_replaced():
    _, clean = _decode(_bytes("MR_small.dcm"))
    assert clean.OperatorsName == "ANONYMOUS"     # X/Z/D -> D
    assert "NameOfPhysiciansReadingStudy" not in clean  # X
    assert clean.DeviceSerialNumber == "ANONYMOUS"  # X/Z/D -> D
    assert clean.SeriesDate == ""                 # was empty: D keeps it empty
    assert clean.WindowCenter == 600              # kept


def test_markers_of_deidentification_are_written():
    _, clean = _decode(_bytes("CT_small.dcm"))
    assert clean.PatientIdentityRemoved == "YES"
    assert list(clean.DeidentificationMethod) == DEID_METHOD
    assert all(len(v) <= 64 for v in clean.DeidentificationMethod)  # LO limit
    (code,) = clean.DeidentificationMethodCodeSequence
    assert (code.CodeValue, code.CodingSchemeDesignator) == ("113100", "DCM")
    assert code.CodeMeaning == "Basic Application Confidentiality Profile"
    assert clean.LongitudinalTemporalInformationModified == "REMOVED"


@pytest.mark.parametrize("filename", ["CT_small.dcm", "MR_small.dcm"])
def test_every_instance_uid_is_remapped_and_file_meta_matches(filename):
    original = _read(_bytes(filename))
    _, clean = _decode(_bytes(filename))
    before, after = _all_uid_values(original), _all_uid_values(clean)
    assert before and not (before & after)
    assert clean.file_meta.MediaStorageSOPInstanceUID == clean.SOPInstanceUID
    assert clean.SOPClassUID == original.SOPClassUID
    assert all(uid.startswith("2.25.") and len(uid) <= 64 for uid in after)
    # 2.25 UIDs carry a UUID: at most 128 bits
    assert all(int(uid[5:]) < 2**128 for uid in after)


def test_uid_remapping_is_deterministic_and_keyed():
    data = _bytes("CT_small.dcm")
    first, clean1 = _decode(data)
    second, clean2 = _decode(data)
    assert clean1.SOPInstanceUID == clean2.SOPInstanceUID
    assert first.stored_bytes == second.stored_bytes
    _, other_salt = _decode(data, DecodeOptions(uid_salt="another-salt"))
    assert other_salt.SOPInstanceUID != clean1.SOPInstanceUID
    assert remap_uid("1.2.3", SALT) == remap_uid("1.2.3", SALT) != remap_uid("1.2.4", SALT)


def test_two_files_of_one_study_share_the_remapped_study_uid():
    ds = _read(_bytes("CT_small.dcm"))
    sibling = copy.deepcopy(ds)
    sibling.SOPInstanceUID = ds.SOPInstanceUID + ".2"
    sibling.file_meta.MediaStorageSOPInstanceUID = sibling.SOPInstanceUID
    sibling.SeriesInstanceUID = ds.SeriesInstanceUID + ".2"
    buf = io.BytesIO()
    sibling.save_as(buf)
    _, a = _decode(_bytes("CT_small.dcm"))
    _, b = _decode(buf.getvalue())
    assert a.StudyInstanceUID == b.StudyInstanceUID
    assert a.FrameOfReferenceUID == b.FrameOfReferenceUID
    assert a.SOPInstanceUID != b.SOPInstanceUID
    assert a.SeriesInstanceUID != b.SeriesInstanceUID


CT_PHI = [
    "CompressedSamples^CT1", "1CT1", "ABCD1234", "1234ABCD", "JFK IMAGING CENTER", "CT01_OC0",
    "CLUNIE1", "GEMS_IDEN_01", "GE_GENESIS_FF", "20040119", "19970430", "072730", "112749",
    "ISOVUE300", "Uncompressed",
]
MR_PHI = ["CompressedSamples^MR1", "4MR1", "-0000200", "20040826", "185059", "185434", "Uncompressed"]


@pytest.mark.parametrize("filename,phi", [("CT_small.dcm", CT_PHI), ("MR_small.dcm", MR_PHI)])
def test_original_phi_is_nowhere_in_stored_bytes_or_record(filename, phi):
    original = _read(_bytes(filename))
    source, _ = _decode(_bytes(filename))
    phi = phi + sorted(_all_uid_values(original))
    record_text = json.dumps(source.deid_record)
    for value in phi:
        assert value.encode() not in source.stored_bytes, f"{value!r} leaked into the stored file"
        assert value not in record_text
        assert value not in json.dumps(source.metadata)


def test_record_lists_counts_and_keywords_only():
    source, _ = _decode(_bytes("CT_small.dcm"))
    record = source.deid_record
    assert record["profile"] == deid_profile.PROFILE_NAME
    assert record["counts"]["private_removed"] > 100
    assert "PatientName" in record["keywords"]["Z"]
    assert "PatientID" in record["keywords"]["D"]
    assert "OtherPatientIDsSequence" in record["keywords"]["X"]
    assert {"SOPInstanceUID", "StudyInstanceUID", "MediaStorageSOPInstanceUID"} <= set(record["keywords"]["U"])
    assert set(record) == {"profile", "profile_revision", "method", "counts", "keywords", "preamble_cleared"}


def _nested_dataset() -> Dataset:
    ds = Dataset()
    ds.PatientName = "Doe^Jane"
    ref = Dataset()
    ref.ReferencedSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
    ref.ReferencedSOPInstanceUID = "1.2.3.4.5.6"
    ref.add_new(0x00291010, "LO", "private in a sequence")
    ds.ReferencedImageSequence = Sequence([ref])          # X/Z/U*: kept, UIDs remapped
    proc = Dataset()
    proc.CodeValue = "CTCHEST"
    proc.add_new(0x00090010, "LO", "ACME")
    proc.PerformingPhysicianName = "Dr^Who"             # X, nested
    ds.ProcedureCodeSequence = Sequence([proc])           # not listed: kept, recursed
    req = Dataset()
    req.RequestedProcedureID = "REQ-1"
    ds.RequestAttributesSequence = Sequence([req])        # X
    ds.ReferencedStudySequence = Sequence([Dataset()])    # X/Z -> empty sequence
    ds.add_new(0x50000010, "US", 3)                       # curve
    ds.add_new(0x60003000, "OW", b"\x00\x01" * 8)         # overlay data
    ds.add_new(0x60004000, "LT", "overlay comment")       # overlay comments
    ds.add_new(0x60000010, "US", 4)                       # overlay rows: kept
    return ds


def test_sequences_are_processed_recursively_and_rules_apply():
    ds = _nested_dataset()
    record = deidentify(ds, salt=SALT)
    ref = ds.ReferencedImageSequence[0]
    assert ref.ReferencedSOPInstanceUID == remap_uid("1.2.3.4.5.6", SALT)
    assert ref.ReferencedSOPClassUID == "1.2.840.10008.5.1.4.1.1.2"
    assert 0x00291010 not in ref
    proc = ds.ProcedureCodeSequence[0]
    assert proc.CodeValue == "CTCHEST" and 0x00090010 not in proc and "PerformingPhysicianName" not in proc
    assert "RequestAttributesSequence" not in ds
    assert len(ds.ReferencedStudySequence) == 0
    assert 0x50000010 not in ds and 0x60003000 not in ds and 0x60004000 not in ds
    assert ds[0x60000010].value == 4
    assert record["counts"]["curves_overlays_removed"] == 3
    assert record["counts"]["private_removed"] == 2


def test_overlay_data_is_removed_from_a_real_file():
    original = _read(_bytes("examples_overlay.dcm"))
    assert 0x60003000 in original
    _, clean = _decode(_bytes("examples_overlay.dcm"))
    assert 0x60003000 not in clean and 0x60000010 in clean


def test_split_key_is_keyed_hash_of_patient_then_study():
    ds = _read(_bytes("CT_small.dcm"))
    assert split_key(ds, SALT) == "pt-" + hashlib.sha256((SALT + "1CT1").encode()).hexdigest()[:16]
    source, _ = _decode(_bytes("CT_small.dcm"))
    assert source.split_key == split_key(ds, SALT)
    del ds.PatientID
    assert split_key(ds, SALT) == "st-" + hashlib.sha256((SALT + ds.StudyInstanceUID).encode()).hexdigest()[:16]
    del ds.StudyInstanceUID
    assert split_key(ds, SALT) == ""


def test_profile_table_covers_the_standard_attributes():
    from pydicom.datadict import tag_for_keyword

    table = deid_profile.BASIC_PROFILE
    assert len(table) > 500
    assert set(table.values()) <= set(deid_profile.BASIC_CHOICE)
    expected = {
        "PatientName": "Z", "PatientBirthDate": "Z", "PatientSex": "Z", "AccessionNumber": "Z",
        "PatientID": "Z/D", "InstitutionName": "X/Z/D", "InstitutionAddress": "X",
        "DeviceSerialNumber": "X/Z/D", "StationName": "X/Z/D", "OperatorsName": "X/Z/D",
        "ReferringPhysicianName": "Z", "PerformingPhysicianName": "X", "StudyDate": "Z",
        "SeriesDate": "X/D", "AcquisitionDate": "X/Z", "ContentDate": "Z/D",
        "StudyInstanceUID": "U", "SeriesInstanceUID": "U", "SOPInstanceUID": "U",
        "FrameOfReferenceUID": "U", "ReferencedSOPInstanceUID": "U",
        "OtherPatientIDsSequence": "X", "RequestAttributesSequence": "X",
        "ReferencedImageSequence": "X/Z/U*", "StudyDescription": "X", "ImageComments": "X",
    }
    for keyword, code in expected.items():
        assert table[tag_for_keyword(keyword)] == code, keyword
    assert deid_profile.action_for(tag_for_keyword("Modality")) == "K"


# --- the table as a data file (annotation/ingest/deid_profile.csv) ---------------------------


def test_profile_csv_loads_the_table():
    import csv

    # BASIC_PROFILE is the CSV, loaded once at import; reloading it gives the same dict.
    assert deid_profile.load_profile() == deid_profile.BASIC_PROFILE
    assert deid_profile.load_profile(deid_profile.PROFILE_CSV) is not deid_profile.BASIC_PROFILE
    with open(deid_profile.PROFILE_CSV, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["tag", "action", "name"]
    assert len(rows) - 1 == len(deid_profile.BASIC_PROFILE) == 617
    # Documented format: 8 upper-case hex digits, no separator; rows in table (tag) order.
    assert all(len(tag) == 8 and tag == tag.upper() for tag, _, _ in rows[1:])
    assert [int(tag, 16) for tag, _, _ in rows[1:]] == list(deid_profile.BASIC_PROFILE)
    assert list(deid_profile.BASIC_PROFILE) == sorted(deid_profile.BASIC_PROFILE)
    # Every compound code of the standard is used, and only known codes.
    assert set(deid_profile.BASIC_PROFILE.values()) == set(deid_profile.BASIC_CHOICE) - {"K"}


@pytest.mark.parametrize(("tag", "code", "resolved"), [
    pytest.param(0x00100010, "Z", "Z", id="Patient's Name"),
    pytest.param(0x00100020, "Z/D", "D", id="Patient ID"),
    pytest.param(0x00100030, "Z", "Z", id="Patient's Birth Date"),
    pytest.param(0x00080080, "X/Z/D", "D", id="Institution Name"),
    pytest.param(0x00080081, "X", "X", id="Institution Address"),
    pytest.param(0x00080022, "X/Z", "Z", id="Acquisition Date"),
    pytest.param(0x00080021, "X/D", "D", id="Series Date"),
    pytest.param(0x00080018, "U", "U", id="SOP Instance UID"),
    pytest.param(0x0020000D, "U", "U", id="Study Instance UID"),
    pytest.param(0x00081140, "X/Z/U*", "U", id="Referenced Image Sequence"),
    pytest.param(0x00080106, "D", "D", id="Context Group Version"),
    pytest.param(0x00001000, "X", "X", id="Affected SOP Instance UID (first row)"),
    pytest.param(0xFFFCFFFC, "X", "X", id="Data Set Trailing Padding (last row)"),
    pytest.param(0x00080060, None, "K", id="Modality: not in the table, kept"),
])
def test_profile_known_tags(tag, code, resolved):
    assert deid_profile.BASIC_PROFILE.get(tag) == code
    assert deid_profile.action_for(tag) == resolved


def test_profile_csv_names_match_the_data_dictionary():
    import csv

    from pydicom.datadict import dictionary_description

    def norm(text: str) -> str:  # pydicom spells a few names with other case/spacing
        return "".join(text.split()).lower()

    with open(deid_profile.PROFILE_CSV, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            assert norm(row["name"]) == norm(dictionary_description(int(row["tag"], 16))), row


GOOD_ROWS = "tag,action,name\n00100010,Z,Patient's Name\n00100020,Z/D,Patient ID\n"


@pytest.mark.parametrize(("row", "message"), [
    pytest.param("00080081,Q,Institution Address", "unknown action 'Q' for tag 00080081", id="bad action"),
    pytest.param("00080081,x,Institution Address", "unknown action 'x'", id="lower-case action"),
    pytest.param("00080081,,Institution Address", "unknown action ''", id="empty action"),
    pytest.param("00100010,X,Patient's Name", "duplicate tag 00100010 (first on line 2)", id="duplicate tag"),
    pytest.param("00100020,Z/D,Patient ID", "duplicate tag 00100020 (first on line 3)", id="duplicate row"),
    pytest.param("0010002G,Z,Bad", "tag '0010002G' is not 8 hex digits", id="non-hex tag"),
    pytest.param("0x100030,Z,Patient's Birth Date", "tag '0x100030' is not 8 hex digits", id="0x tag"),
    pytest.param("001000300,Z,Patient's Birth Date", "tag '001000300' is not 8 hex digits", id="9 digits"),
    pytest.param("0010,0030,Z,Patient's Birth Date", "expected 3 fields", id="tag with comma"),
    pytest.param("00100030,Z", "expected 3 fields", id="missing field"),
    pytest.param("00100030,Z, ", "tag 00100030 has no attribute name", id="blank name"),
])
def test_profile_csv_malformed_row_raises(tmp_path, row, message):
    path = tmp_path / "profile.csv"
    path.write_text(GOOD_ROWS + row + "\n00100030,Z,Patient's Birth Date\n", encoding="utf-8")
    with pytest.raises(deid_profile.ProfileError) as excinfo:
        deid_profile.load_profile(path)
    # The error names the file and the line of the bad row (the header is line 1).
    assert f"{path}, line 4: {message}" in str(excinfo.value)
    assert isinstance(excinfo.value, ValueError)


@pytest.mark.parametrize("text", ["tag;action;name\n00100010;Z;Patient's Name\n", "", "00100010,Z,x\n"])
def test_profile_csv_bad_header_raises(tmp_path, text):
    path = tmp_path / "profile.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(deid_profile.ProfileError, match="header must be 'tag,action,name'"):
        deid_profile.load_profile(path)


def test_profile_csv_small_valid_file(tmp_path):
    path = tmp_path / "profile.csv"
    path.write_text(GOOD_ROWS + "00081140,X/Z/U*,Referenced Image Sequence\n0008002a,X/Z/D,x\n")
    assert deid_profile.load_profile(str(path)) == {
        0x00100010: "Z", 0x00100020: "Z/D", 0x00081140: "X/Z/U*", 0x0008002A: "X/Z/D",
    }
