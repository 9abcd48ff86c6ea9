"""Answer parsing: turn a model's raw text into an auditable ``ParsedAnswer``.

This docstring is the audit reference for how every stored ``Prediction.parse_method`` came about.

API
===
``parse_answer(text, *, answer_type, options=(), image_size=None, box_format="auto") -> ParsedAnswer``

* ``answer_type``: "single_choice", "yes_no", "multi_choice", "box" or "short_text".
* ``options``: option texts in the order shown; their letters are A, B, C, … (at most 26). With no
  options every letter A–Z is in range and no option-text rule applies.
* ``image_size``: (width, height) in pixels; needed to scale 0–1 and 0–1000 boxes. A missing or invalid
  size (None, zero, negative) counts as unknown.
* ``box_format``: "auto", "pixel", "unit" (0–1) or "norm1000" (0–1000).
* Never raises for any text (None, "", bytes, 100 kB of junk); ValueError only for an unknown
  answer_type or box_format. Deterministic; regexes are compiled once (option-text patterns are cached)
  and are linear in the input. A bug that raises inside the parser is reported as unparseable
  "no_match" with detail "internal parser error: …" rather than propagated.

``ParsedAnswer(outcome, value, method, detail)`` with ``as_dict()``; outcome is one of ``OUTCOMES``:

* "answered": value is one letter "A" (single_choice, yes_no); a sorted list of unique letters
  (multi_choice; [] only for an explicit "none of the options"); [x0, y0, x1, y1] floats in pixels,
  x0 < x1 and y0 < y1 (box); a normalised string (short_text).
* "abstained": the model declined to answer (value None).
* "unparseable": no answer could be read (value None). Never resolved by guessing: no random option,
  no closest string, no fuzzy match, no default to the first option.

Preprocessing (every type)
==========================
Unicode NFKC; curly quotes and dashes made plain; ``<think>…</think>`` (also ``thinking``/``reasoning``)
blocks removed, an unclosed block runs to the end, text before an orphan ``</think>`` is dropped;
``<answer>X</answer>`` and LaTeX ``\\boxed{X}`` become the answer phrase "Answer: X"; ``\\text{X}`` -> X;
code fences, backticks, ``*``/``_`` emphasis (underscores inside words such as ``bbox_2d`` stay), ``$``,
HTML tags <strong>/<em>/<p>/<br>/<span>/<mark> (<b>/<i>/<u> only when a closing tag exists, since "<B>"
may be a letter), heading/quote/bullet markers at line starts are removed; runs of spaces collapse;
surrounding whitespace and quotes are stripped. Nothing left, or only punctuation -> unparseable "empty".

Answer phrases and abstentions (every type)
===========================================
An explicit answer phrase is "Answer: X", "Answer - X", "The (final/correct) answer is X", "The answer to
the question is X", "Response: X", "The correct/best/final option|choice|letter is X", "Correct option:
X", "I (would) choose|select|pick|go with X" (plus the ``<answer>``/``\\boxed`` forms). Its content is the
rest of that line (or the next non-empty line), leading hedges ("I think", "probably", "it is")
removed. The LAST phrase whose content names something wins (only the last 32 phrases are
examined); a phrase whose content names nothing ("the answer is based on…") is ignored. A phrase's
content that is itself contradictory ("Answer: B. Actually, C") is ambiguous.

Abstention phrases: "not sure", "unsure", "I'm/is/remains uncertain", "I don't know", "no idea",
"cannot/can't/could not/unable to/not able to/impossible to + determine|tell|say|answer|assess|conclude|
decide|know|evaluate|be sure|be certain|interpret|comment|help|assist|provide a diagnosis|see/view the
image|make a (definitive) diagnosis", "cannot be determined", "insufficient/not enough information|data|
evidence|…", "no way to tell", "hard to say"; a response that is, or starts with, "uncertain"/"unsure";
a response that is (or starts with, followed by punctuation) "unclear", "unknown", "indeterminate",
"N/A", "idk". Not abstentions: "cannot exclude", "cannot rule out", "unclear margins" in a sentence.
They count only when no explicit answer was given: an answer phrase, a whole-response letter, an exact option text or an
opening letter ("B. …") win over them. Abstention is checked BEFORE the yes/no word and before letters
or option texts inside sentences, so "Not sure" / "No idea" / "No, I cannot determine this" are
abstained, never "no". Text that is part of an option's own text (an option "Cannot be determined")
is not an abstention.

Choice answers (single_choice, yes_no), in order
================================================
1. answer_phrase — the last answer phrase whose content is a letter ("B", "(B)", "b" only when the
   content is just the letter; "B because …", "B. text" and "B hypodense" are fine, "A lesion" is not),
   an option text at its start, a yes/no word, or an abstention (-> abstained).
   Then a whole response such as "N/A", "Unknown." -> abstained (unless it is an option's text).
2. letter_only — the whole response is a letter: "A", "(A)", "[A]", "A.", "A)", "'A'", '["A"]', "a"
   (a lowercase letter only here). Several letters ("A, C", "A or B") -> ambiguous.
3. option_text / yes_no_word — the whole response is one option's text (case-insensitive, trailing
   punctuation ignored); yes_no_word when that text is "yes"/"no".
4. letter_prefix — the response opens with a marked letter: "B. text", "B) text", "(B) text", "[B]",
   "Option B", "B is correct", a first line that is only a letter, or "B: text"/"B text" where text is
   option B's. Ambiguous when the text right after it is another option's text ("A. no" with A = yes)
   or the response contradicts it later: a revision ("actually C", "or (C)", "wait, C"), "C is
   correct", another "C." line or a line that is only "C", or "(C) <option C's text>" (an echoed
   option list). Explanations that merely mention another letter ("option C would look brighter",
   "(C) is wrong") do not count.
5. abstain_phrase — an abstention phrase (see above) -> abstained.
6. yes_no_word — a leading "yes"/"no" (also yeah/yep/yup, nope/nah) followed by a non-letter maps to
   the option whose text is "yes"/"no". "Not", "None", "Nothing", "Noted" are never "no". "Yes or no",
   "yes/no" -> ambiguous. Yes/no words inside a sentence are not read.
7. letter_mention — UPPERCASE letters clearly marked in running text: "(B)", "[B]", "option B",
   "B." at a line start, a line that is only "B", "B is the correct answer", or revisions "actually
   C", "or C". One distinct letter answers; several are ambiguous. Bare capitals in prose ("A lesion
   is seen", "I think") and lowercase letters are never letters. If option texts are also named and
   none is that letter's -> ambiguous.
8. option_text — option texts named as whole words (case-insensitive) in running text; a mention inside
   a longer option's mention is dropped; a mention preceded by a negation ("not", "no", "without",
   "rather than", "ruled out", …, within two words) does not count. Exactly one option -> answered;
   several -> ambiguous; only negated ones -> no_match. "yes"/"no" option texts are not searched here.
9. no_match.
A letter beyond the options (E with four options) -> unparseable "letter_out_of_range".

Multi-choice answers, in order
==============================
1. answer_phrase — "Answer: B, D", "The correct options are A and C", content as below (also a
   letter list followed by "because …"). Then a whole response such as "N/A" -> abstained.
2. none_selected — "None", "None of the above/options/them", "No correct option", "Neither", "Nothing"
   -> answered [] (unless that text is itself an option, which then matches as option text).
3. letter_list — letters only: "A, C", "A,C", "A and C", "A & C", "A; C", "(A)(C)", "A C", "a, c",
   "ACD" (concatenated, all distinct and in range); items "A. <text>\\nC. <text>" or "(A) x, (C) y"
   whose text is exactly that letter's option text (another option's text -> ambiguous); "Option B",
   "Options A and C", "A and C are correct"; a first line of letters only followed by an explanation.
   Unique letters are sorted. "A or C" -> ambiguous.
4. option_text — the whole response is option texts joined by commas, semicolons, "and", "&", "/" or
   newlines (longest option text first).
5. abstain_phrase, else no_match. Any letter out of range -> "letter_out_of_range". Sentences that
   merely mention options are not read for multi_choice (too easily a discussion of each option).

Boxes
=====
Found in this order (matched text is blanked so nothing is found twice):
* box_qwen — ``<|box_start|>(x0,y0),(x1,y1)<|box_end|>`` or ``<box>…</box>`` holding four numbers;
  always 0–1000 in auto mode.
* box_json — ``{"bbox_2d": [x0, y0, x1, y1]}`` (quoted keys bbox_2d, bbox, box_2d, box, bounding_box,
  coordinates, coords) or quoted named corners ``{"x0": …, "y0": …, "x1": …, "y1": …}``; scale as in
  auto. The same keys unquoted (``bbox: [...]``) are plain boxes.
* named corners — ``x0=10, y0=20, x1=30, y1=40`` (x0/y0/x1/y1, x1/y1/x2/y2, xmin/ymin/xmax/ymax,
  left/top/right/bottom), point pairs ``(x0, y0), (x1, y1)`` / ``[[x0, y0], [x1, y1]]``, quads
  ``[x0, y0, x1, y1]`` / ``(x0, y0, x1, y1)``, and four bare numbers as the whole response or the whole
  content of an answer phrase; method by scale: box_pixel, box_unit, box_1000.
Scale: an explicit box_format wins for every syntax. auto: Qwen/<box> tokens -> 0–1000; all four values
in [0, 1] -> unit; else, with an image size, a value beyond the width (x) or height (y) while all are
<= 1000 -> 0–1000; else pixels. Unit and 0–1000 values are scaled with image_size=(width, height);
without a usable size -> unparseable "needs_image_size". Corners in reverse order are sorted; zero area
(or a non-finite number) -> "degenerate_box". Several different boxes -> the first box within 300
characters after the last answer phrase that has one, else "ambiguous". Negative numbers are kept.
No box: abstain_phrase, else no_match.

Joint answer + box (single_choice / yes_no items that also ask for the evidence box)
===================================================================================
``parse_answer_with_box(text, *, answer_type, options, image_size, box_format) -> (choice, box)``: the
box is read from the whole response as under "Boxes"; the option is read as under "Choice answers"
from the response with every found box blanked, so "B (10, 20, 50, 60)" is B and that box, "Answer: B.
Box: [10,20,50,60]" likewise, "[10, 20, 50, 60]" alone is an unparseable choice ("empty") with a box,
and "B" alone is B with an unparseable box ("no_match").

Short text
==========
free_text — lower-cased, whitespace collapsed, surrounding quotes and trailing punctuation stripped;
answer_phrase when it is the content of the last answer phrase ("The answer is: left lobe" -> "left
lobe"); abstain_phrase for abstentions; nothing alphanumeric -> unparseable "empty".

Methods
=======
letter_only, letter_prefix, letter_mention, answer_phrase, option_text, yes_no_word, letter_list,
none_selected, box_pixel, box_unit, box_1000, box_qwen, box_json, free_text (answered);
abstain_phrase (abstained); empty, no_match, ambiguous, letter_out_of_range, degenerate_box,
needs_image_size (unparseable).
"""
from __future__ import annotations

from .parse import parse_answer, parse_answer_with_box
from .types import METHODS, OUTCOMES, ParsedAnswer

__all__ = ["METHODS", "OUTCOMES", "ParsedAnswer", "parse_answer", "parse_answer_with_box"]
