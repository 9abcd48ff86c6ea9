"""Prose rejection of a question's premise ("There is no cyst in the spleen; the premise is false."), read
as the rejecting option on false-premise and true-premise variants (see the package docstring)."""
from __future__ import annotations

import re

_NOT_IMAGE = r"(?!(?:images?|pictures?|scans?|photos?|files?|attachments?)\b)"
_SEEN = r"(?:present|seen|visible|identified|shown|depicted|evident|found|detected|noted|appreciated|demonstrated)"
#: Explicit statements about the premise, or "no such …": they also overrule a different explicit letter.
STRONG = re.compile(
    r"\bpremise\b[^.;!?\n]{0,60}?\b(?:is|seems|appears\s+to\s+be|was)\s+(?:(?!not\b)\w+\s+)?"
    r"(?:false|incorrect|wrong|invalid|mistaken|flawed|inaccurate|untrue|erroneous|"
    r"not\s+(?:true|correct|valid|accurate|supported|met|borne\s+out))"
    r"|\bpremise\b[^.;!?\n]{0,60}?\b(?:does\s+not|doesn'?t|did\s+not|cannot|can'?t|may\s+not)\s+"
    r"(?:hold|apply|stand|be\s+(?:confirmed|verified|supported))"
    r"|\b(?:false|incorrect|wrong|invalid|mistaken|flawed|faulty|erroneous)\s+premise"
    r"|\b(?:reject|challenge|dispute)s?\s+the\s+(?:question'?s\s+)?premise"
    r"|\bno\s+such\s+\w+",
    re.IGNORECASE,
)
#: Statements that the lesion asked about is not there ("there is no cyst in the spleen", "I do not see
#: any cyst", "no cyst is seen"): read only when nothing else answered.
WEAK = re.compile(
    r"\bthere\s+(?:is|are|was|were)\s+(?:no|not\s+(?:a|an|any))\s+(?!(?:doubt|question|way|need|reason)\b)\w+"
    r"|\bno\s+(?:[\w-]+\s+){1,4}?(?:is|are|was|were|can\s+be|could\s+be)\s+" + _SEEN +
    r"|\b(?:do|does|did|can|could)\s*(?:not|n'?t)\s+(?:see|identify|find|detect|visuali[sz]e|appreciate|observe)\s+"
    r"(?:any|a|an)\s+" + _NOT_IMAGE +
    r"|\b(?:do|does|did)\s*(?:not|n'?t)\s+(?:exist|contain|have|harbou?r)\b"
    r"|\b(?:is|are)\s+(?:not\s+" + _SEEN + r"|absent|non-?existent)\b"
    r"|\bnot\s+present\b",
    re.IGNORECASE,
)


def rejection(text: str) -> tuple[str, bool] | None:
    """(the phrase, whether it is a strong one) when ``text`` rejects the premise, else None."""
    m = STRONG.search(text)
    if m:
        return m.group(0), True
    m = WEAK.search(text)
    return (m.group(0), False) if m else None
