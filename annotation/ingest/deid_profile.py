"""DICOM PS3.15 Annex E Basic Application Level Confidentiality Profile, as data.

`BASIC_PROFILE` transcribes the "Basic Prof." column of PS3.15 Table E.1-1
(Application Level Confidentiality Profile Attributes, DICOM 2024b): one entry per
attribute tag, holding the action code exactly as the standard prints it.  It is
loaded once, at import, from ``deid_profile.csv`` next to this module (UTF-8, one
header row ``tag,action,name``, then one row per attribute in the order of the table):

- ``tag``: the attribute tag as 8 hex digits, group then element, no separator and
  no ``0x`` (``00100010`` is Patient's Name (0010,0010)); upper case by convention;
- ``action``: the action code as printed, one of the keys of `BASIC_CHOICE`
  (``X``, ``Z/D``, ``X/Z/U*`` ...);
- ``name``: the attribute name, for people (checked against pydicom's data
  dictionary; not used by the code).

`load_profile` validates the file (header, three fields per row, hex tags, no
duplicate tag, known action codes, non-empty name) and raises `ProfileError` naming
the file and line of the first bad row.

Action codes (PS3.15 E.3.1, Table E.1-1 legend):

====  ==================================================================
X     remove the attribute
Z     replace with a zero-length value (empty sequence for SQ)
D     replace with a non-zero-length dummy value consistent with the VR
U     replace the UID with a non-zero-length UID that is internally
      consistent within the set of instances (see `dicom.remap_uid`)
K     keep (the default for every attribute not listed here)
====  ==================================================================

Compound codes let an application choose per IOD (for example "Z/D": Z unless the
attribute is Type 1, then D).  We do not look up the Type of every attribute in every
IOD; `BASIC_CHOICE` fixes one resolution per compound code, always the one that keeps
the attribute present, so the de-identified object stays a valid instance of its IOD
wherever the original was:

=======  ==========  ==============================================================
code     resolved    why
=======  ==========  ==============================================================
X/Z      Z           kept, emptied: Type 2 is the strictest type it can have
X/D      D           kept, dummy value: covers Type 1
Z/D      D           kept, dummy value: covers Type 1
X/Z/D    D           kept, dummy value: covers Type 1
X/Z/U*   U           sequence kept; UIDs inside are remapped, every other attribute
                     inside is processed by this same table (recursion)
=======  ==========  ==============================================================

Rules that are not per-tag entries live in `dicom.deidentify` and are listed in
`GROUP_RULES` for documentation: every private attribute is removed (Table E.1-1,
"Private attributes", X), curve groups (50xx,eeee) are removed, and Overlay Data
(60xx,3000) and Overlay Comments (60xx,4000) are removed.  The profile is applied
recursively inside every sequence that is kept.
"""
from __future__ import annotations

import csv
import os
import re
from pathlib import Path

from common.formatting import kv_rows

PROFILE_NAME = "DICOM PS3.15 Annex E Basic Application Level Confidentiality Profile"
PROFILE_REVISION = "2024b"

#: The resolution of every action code to one of the basic actions X, Z, D, U, K.
BASIC_CHOICE: dict[str, str] = {
    "X": "X",
    "Z": "Z",
    "D": "D",
    "U": "U",
    "K": "K",
    "X/Z": "Z",
    "X/D": "D",
    "Z/D": "D",
    "X/Z/D": "D",
    "X/Z/U*": "U",
}

#: Attribute groups handled by rule rather than by tag (see module docstring).
GROUP_RULES: dict[str, str] = {
    "private attributes (odd group)": "X",
    "curve data (50xx,eeee)": "X",
    "overlay data (60xx,3000)": "X",
    "overlay comments (60xx,4000)": "X",
}

#: File Meta Information (group 0002) attributes that name the sending station.  They
#: are not in Table E.1-1 (which addresses the dataset) but identify a site exactly
#: like Station AE Title (0008,0055), which the table removes; we remove them too.
FILE_META_REMOVE: frozenset[int] = frozenset({
    0x00020016,  # Source Application Entity Title
    0x00020017,  # Sending Application Entity Title
    0x00020018,  # Receiving Application Entity Title
    0x00020100,  # Private Information Creator UID
    0x00020102,  # Private Information
})

#: The data file holding PS3.15 Table E.1-1, "Basic Prof." column (see module docstring).
PROFILE_CSV = Path(__file__).with_name("deid_profile.csv")

_HEADER = ["tag", "action", "name"]
_TAG = re.compile(r"[0-9A-Fa-f]{8}")


class ProfileError(ValueError):
    """The profile CSV is malformed; the message names the file and line."""


def load_profile(path: str | os.PathLike[str] = PROFILE_CSV) -> dict[int, str]:
    """Read a profile CSV (format in the module docstring): tag -> action code as printed."""
    table: dict[int, str] = {}
    first_line: dict[int, int] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header != _HEADER:
            raise ProfileError(f"{path}: header must be {','.join(_HEADER)!r}, got {header!r}")
        for row in reader:
            where = f"{path}, line {reader.line_num}"
            if len(row) != 3:
                raise ProfileError(f"{where}: expected 3 fields (tag,action,name), got {row!r}")
            tag_text, action, name = row
            if not _TAG.fullmatch(tag_text):
                raise ProfileError(f"{where}: tag {tag_text!r} is not 8 hex digits")
            if action not in BASIC_CHOICE:
                raise ProfileError(
                    f"{where}: unknown action {action!r} for tag {tag_text} "
                    f"(expected one of {', '.join(BASIC_CHOICE)})"
                )
            if not name.strip():
                raise ProfileError(f"{where}: tag {tag_text} has no attribute name")
            tag = int(tag_text, 16)
            if tag in table:
                raise ProfileError(f"{where}: duplicate tag {tag_text} (first on line {first_line[tag]})")
            table[tag] = action
            first_line[tag] = reader.line_num
    return table


#: PS3.15 Table E.1-1, "Basic Prof." column: tag -> action code as printed.
BASIC_PROFILE: dict[int, str] = load_profile()


def action_for(tag: int) -> str:
    """The resolved basic action (X, Z, D, U or K) for a standard (even-group) tag."""
    return BASIC_CHOICE[BASIC_PROFILE.get(int(tag), "K")]


# ---------------------------------------------------------------- the record, as people read it

#: what each counter of a de-identification record (`dicom.deidentify`, `nifti.deidentified_copy`) counts
RECORD_COUNTS = {
    "removed": "Attributes removed",
    "emptied": "Attributes emptied",
    "dummied": "Attributes replaced by a dummy value",
    "uids_remapped": "UIDs replaced (consistently across the series)",
    "private_removed": "Private attributes removed",
    "curves_overlays_removed": "Curves and overlays removed",
    "file_meta_removed": "File meta attributes removed",
}
RECORD_KEYWORDS = {"X": "Which were removed", "Z": "Which were emptied", "D": "Which got a dummy value",
                   "U": "Which UIDs were replaced"}


def describe_record(record: dict) -> list[tuple[str, str]]:
    """A de-identification record as (what, detail) rows for the image page: the profile and method, how many
    attributes each action touched and which (standard keywords only; the removed values are never stored)."""
    if not record:
        return []
    rows: list[tuple[str, str]] = []
    if record.get("profile"):
        revision = f" (DICOM {record['profile_revision']})" if record.get("profile_revision") else ""
        rows.append(("Profile", f"{record['profile']}{revision}"))
    if record.get("method"):
        rows.append(("Method recorded in the file", "; ".join(p for p in str(record["method"]).split("\\") if p)))
    counts = record.get("counts") or {}
    keywords = record.get("keywords") or {}
    for key, label in RECORD_COUNTS.items():
        if key in counts:
            rows.append((label, f"{int(counts[key]):,}"))
    for code, label in RECORD_KEYWORDS.items():
        names = keywords.get(code) or []
        if names:
            rows.append((label, ", ".join(names)))
    if "preamble_cleared" in record:
        rows.append(("File preamble cleared", "yes" if record["preamble_cleared"] else "no"))
    if "blanked_fields" in record:
        rows.append(("Header text fields blanked", ", ".join(record["blanked_fields"]) or "none had text"))
    if "extensions_removed" in record:
        rows.append(("Header extensions removed", f"{int(record['extensions_removed']):,}"))
    known = {"profile", "profile_revision", "method", "counts", "keywords", "preamble_cleared", "blanked_fields",
             "extensions_removed"}
    rows.extend(kv_rows({k: v for k, v in record.items() if k not in known and v not in (None, "", [], {})}))
    return rows
