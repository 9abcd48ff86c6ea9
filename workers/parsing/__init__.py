"""Answer parsing: turn a model's raw text into an auditable ``ParsedAnswer``.

This docstring is the audit reference for how every stored ``Prediction.parse_method`` came about.

API
===
``parse_answer(text, *, answer_type, options=(), image_size=None, box_format="auto", prompt=None,
rejecting=None) -> ParsedAnswer``

* ``answer_type``: "single_choice", "yes_no", "multi_choice", "box" or "short_text".
* ``options``: option texts in the order shown; their letters are A, B, C, … (at most 26). With no
  options every letter A–Z is in range and no option-text rule applies.
* ``image_size``: (width, height) in pixels; needed to scale 0–1 and 0–1000 boxes. A missing or invalid
  size (None, zero, negative) counts as unknown.
* ``box_format``: "auto", "pixel", "unit" (0–1) or "norm1000" (0–1000).
* ``prompt``: the prompt text as shown to the model, or None. Its own sentences are removed from the
  response before parsing (see "Echo removal").
* ``rejecting``: the letter of the rejecting option of a false_premise or true_premise variant (the
  control is parsed the same way), else None. Single choice and yes/no only; ignored for other types.
  See "False premise".
* Never raises for any text (None, "", bytes, 100 kB of junk); ValueError only for an unknown
  answer_type or box_format, or a ``rejecting`` that is not the letter of one of the options.
  Deterministic; regexes are compiled once (option-text and prompt patterns are cached) and are linear
  in the input. A bug that raises inside the parser is reported as unparseable "no_match" with detail
  "internal parser error: …" rather than propagated.

``ParsedAnswer(outcome, value, method, detail)`` with ``as_dict()``; outcome is one of ``OUTCOMES``:

* "answered": value is one letter "A" (single_choice, yes_no); a sorted list of unique letters
  (multi_choice; [] only for an explicit "none of the options" or an empty JSON answer list);
  [x0, y0, x1, y1] floats in pixels, x0 < x1 and y0 < y1 (box); a normalised string (short_text).
* "abstained": the model declined to answer (value None).
* "unparseable": no answer could be read (value None). Never resolved by guessing: no random option,
  no closest string, no fuzzy match, no default to the first option.

``method_family(method)`` maps a stored method to one of ``FAMILIES`` (for reporting each model's rate
of each way of answering): "letter" (letter_only, letter_prefix, letter_mention, answer_phrase,
letter_list); "option_text" (option_text, yes_no_word, answer_phrase_text, none_selected, and
premise_rejection — a prose rejection read as the rejecting option: the answer was read from words
rather than a letter); "json"; "box" (box_pixel, box_unit, box_1000, box_qwen, box_json); "free_text"
(free_text: short-text items); "abstained" (abstain_phrase);
"ambiguous"; "unparseable" (empty, no_match, letter_out_of_range, degenerate_box, needs_image_size, and
any unknown method); "error" (the method "error" that execution stores for a failed request).

Preprocessing (every type)
==========================
Unicode NFKC; curly quotes made plain, an en dash becomes "-", an em dash " - ", "。" "." and "、" ",";
``<think>…</think>`` (also ``thinking``/``reasoning``) blocks removed, an unclosed block runs to the end,
text before an orphan ``</think>`` is dropped; ``<answer>X</answer>`` and LaTeX ``\\boxed{X}`` become the
answer phrase "Answer: X"; ``\\text{X}`` -> X; code fences, backticks, ``*``/``_`` emphasis (underscores
inside words such as ``bbox_2d`` stay), ``$``, HTML tags <strong>/<em>/<p>/<br>/<span>/<mark>
(<b>/<i>/<u> only when a closing tag exists, since "<B>" may be a letter), heading/quote/bullet markers
at line starts are removed; runs of spaces collapse; surrounding whitespace and quotes are stripped.
Nothing left, or only punctuation -> unparseable "empty".

Echo removal (every type, when ``prompt`` is given)
====================================================
The prompt gets the same preprocessing. Its NON-option lines (context lines such as 'Earlier in this
case, the answer to "…" was: X.' or "The region of interest is marked with a box.", the hint "A senior
colleague thinks the answer is C. liver.", the question, the closing instruction) are split into
sentences (after ".", "?" or "!" and an optional closing quote or bracket, before a space). Every
occurrence of these lines and sentences is removed from the response, longest first (so a whole line
goes before its own sentences): case-insensitive, any whitespace between the words of a sentence (a
line break too, but not between two sentences: in "… the answer is A.\\nYes" the line break ends the echo
and "Yes" stays), a word boundary at each end (a hyphen is not one), the final ".", "!" or "?" optional
(so "A senior colleague thinks the answer is C, but …" loses its echo too). Only pieces of at least
three words, two of them neither a single letter nor a word of an option text, are removed, so
"liver." (the option part of a hint) never goes. Option lines ("A. liver", "(B) spleen", "C) x") are
never removed: an answer may be "B. spleen". A line left with nothing but punctuation is dropped. So
"A senior colleague thinks the answer is C.\\nB" is B, and the hint's "the answer is C" is gone before
any answer phrase is looked for. Nothing left -> unparseable "empty".

Answer phrases and abstentions (every type)
===========================================
An explicit answer phrase is "Answer: X", "Answer - X", "The (final/correct) answer is X", "The answer to
the question is X", "Response: X", "The correct/best/final option|choice|letter is X", "Correct option:
X", "I (would) choose|select|pick|go with X" (plus the ``<answer>``/``\\boxed`` forms), and the Chinese
答案是X, 答案: X (also the full-width colon), 答案为X, 正确答案是X, 正确选项是X, 最终答案: X, 选X, 我选X,
应选X, 选择X. Its content is the rest of that line (or the next non-empty line), leading hedges ("I
think", "probably", "it is") removed. The LAST phrase whose content names something wins (only the
last 32 phrases are examined); a phrase whose content names nothing ("the answer is based on…") is
ignored. A phrase's content that is itself contradictory ("Answer: B. Actually, C") is ambiguous.

Abstention phrases: "not sure", "unsure", "I'm/is/remains uncertain", "I don't know", "no idea",
"cannot/can't/could not/unable to/not able to/impossible to + determine|tell|say|answer|assess|conclude|
decide|know|evaluate|be sure|be certain|interpret|comment|help|assist|provide a diagnosis|see/view the
image|make a (definitive) diagnosis", "cannot be determined", "insufficient/not enough information|data|
evidence|…", "no way to tell", "hard to say", 不确定, 无法确定, 无法判断; a response that is, or starts
with, "uncertain"/"unsure"; a response that is (or starts with, followed by punctuation) "unclear",
"unknown", "indeterminate", "N/A", "idk". Not abstentions: "cannot exclude", "cannot rule out",
"unclear margins" in a sentence. They count only when no explicit answer was given: a JSON answer, an
answer phrase, a whole-response letter, an exact option text or an opening letter ("B. …") win over
them. Abstention is checked BEFORE the yes/no word and before letters inside sentences, so "Not sure" /
"No idea" / "No, I cannot determine this" are abstained, never "no". Text that is part of an option's
own text (an option "Cannot be determined") is not an abstention.

Negated and ruled-out mentions (choice types)
=============================================
Option texts match case-insensitively as whole words, and a hyphen is NOT a word boundary:
"non-malignant" never contains "malignant", "well-defined" never "defined", "benign-appearing" never
starts with "benign". A mention of an option text or a marked letter is ruled out (never selects that
option) when
* a cue precedes it in the same clause (no ". , ; : ! ? ( ) [ ]", line break, "but", "however",
  "although", "though", "yet", "whereas", "while" between), at most six words before an option text or
  two before a letter: not, no (not "no doubt/question/matter"), non, never, nor, neither, without,
  none of, isn't/aren't/wasn't/weren't/doesn't/don't/didn't/couldn't/wouldn't/shouldn't/hasn't/
  haven't/won't, can't, cannot, unlikely, improbable, doubtful, implausible, less/least likely, rather
  than, instead of, other than, unlike, except, excluding, exclude(s/d), rule(s/d) out, ruling out,
  eliminate(s/d), against, absence of, absent, lack(s) of, lacking, free of, negative for, inconsistent
  with ("does not appear to be benign", "unlikely to be benign", "there is no cyst in the spleen",
  "probably not benign", "less likely benign", "cannot be benign", "rather than benign", "not (B)");
* or a predicate follows it (optionally after a marked letter: "mixed density (D) is less likely"): "?"
  ("Benign? No.", "CT?"), is/are/was/were/seems/appears/looks/remains/would be/will be (+ one adverb)
  + not/unlikely/less likely/improbable/implausible/excluded/ruled out/wrong/incorrect/false/doubtful/
  inconsistent/eliminated, can/could/should/may/must/will (safely) be excluded/ruled out/eliminated/
  discarded/dismissed, has/have/had been excluded/ruled out/eliminated, ", unlikely" / "(excluded)" /
  "- wrong", a bare unlikely/excluded/ruled out/incorrect/wrong; after an option text (not after a
  letter, so "I don't know" is no ruled-out "I") also doesn't/don't/isn't/… and "does/do/did not".
"B is correct" ("option B is right") can only be ruled out by a cue before it.

Choice answers (single_choice, yes_no), in order
================================================
0. json — see "JSON answers" (read first; trailing prose is ignored).
1. answer_phrase / answer_phrase_text — the last answer phrase whose content names something:
   * a letter ("B", "(B)", "b" only when the content is just the letter; "B because …", "B. text" and "B
     hypodense" are fine, "A lesion" is not) -> answer_phrase;
   * an option text at its start, also after "the"/"a"/"an" ("The answer is hyperdense", "Answer: the
     liver"), or a yes/no word -> answer_phrase_text;
   * a ruled-out letter or option text ("Answer: not B", "Answer: probably not benign", "Answer: Benign?
     No.", "Answer: B is wrong", "The answer: unlikely to be benign") -> unparseable "no_match" (final:
     earlier phrases are not consulted), unless it is followed by the option given instead ("not
     malignant, but benign", "not B, it is D", "CT? No, MRI": after punctuation, an optional "no"/"nope"
     and "but"/"it is"/"rather"/"instead"/"actually"/"the answer is", the rest read as content);
   * an abstention -> abstained; a content whose only option mentions are ruled out ("Answer: there
     is no cyst in the spleen") -> unparseable "no_match".
   A later revision makes it ambiguous: after the phrase (its content and all text after it) a
   non-ruled-out "actually C", "wait, C", "correction: C", "instead C", "change to C", "switch to C",
   "C is correct/right/the answer", a line that is only "C", or "actually/wait/correction/instead/on
   second thought/I mean/scratch that/change it to/switch to" + an option text followed by punctuation or
   the end ("Wait, actually spleen.") naming a different option -> "ambiguous" ("Answer: B\\nWait, actually
   C"). "or C"/"rather C" alone, "C would be correct", "C." list lines and mere mentions ("option C would
   look brighter") do not revise. Then a whole response such as "N/A", "Unknown." -> abstained (unless
   it is an option's text).
2. letter_only — the whole response is a letter: "A", "(A)", "[A]", "A.", "A)", "'A'", "a" (a
   lowercase letter only here). Several letters ("A, C", "A or B") -> ambiguous.
3. option_text / yes_no_word — the whole response is one option's text (case-insensitive, trailing
   punctuation ignored, also after a leading "the"); yes_no_word when that text is "yes"/"no". Also a
   whole response that rules out one option text and then is exactly another's ("CT? No, MRI.") ->
   option_text for the latter. Also (option_text) a response that opens with one option's text (not
   "yes"/"no") as its whole first line or sentence: followed by a line break, the end, "." or "!" and
   a space, or ", because|since|as|given|due|which|with|based|according" ("Hyperdense.\\n<explanation>",
   "Hyperdense. The lesion is bright.", "Hyperdense, because …"); ambiguous when a later line is exactly
   another option's text or a later text revises it (as after an answer phrase).
4. letter_prefix — the response opens with a marked letter: "B. text", "B) text", "(B) text", "[B]",
   "Option B", "B is correct", a first line that is only a letter, or "B: text"/"B text" where text is
   option B's. An opening letter followed by a ruling-out predicate ("Option B is wrong, …", "(B) can be
   excluded") opens nothing (the later rules decide). Ambiguous when the text right after it is another
   option's text ("A. no" with A = yes) or the response contradicts it later with a letter that is not
   ruled out: a revision ("actually C", "or (C)", "wait, C"), "C is correct" (also "option C is right"),
   another "C." line or a line that is only "C", or "(C) <option C's text>" (an echoed option list).
   Explanations that merely mention another letter ("option C would look brighter", "(C) is wrong") do
   not count.
5. abstain_phrase — an abstention phrase (see above) -> abstained.
6. yes_no_word — a leading "yes"/"no" (also yeah/yep/yup, nope/nah) followed by a non-letter maps to
   the option whose text is "yes"/"no". "Not", "None", "Nothing", "Noted" are never "no". "Yes or no",
   "yes/no" -> ambiguous. Yes/no words inside a sentence are not read.
7. letter_mention — UPPERCASE letters clearly marked in running text and not ruled out: "(B)", "[B]",
   "option B", "B." at a line start, a line that is only "B", "B is the correct answer", or revisions
   "actually C", "or C". One distinct letter answers ("Option B is wrong, option D is right" -> D);
   several are ambiguous; only ruled-out ones ("Not (B).", "(B) can be excluded") -> no_match. Bare
   capitals in prose ("A lesion is seen", "I think", "B is incorrect", "not B") and lowercase letters
   are never letters. If option texts are also named (not ruled out) and none is that letter's ->
   ambiguous.
8. no_match — option texts named in running prose are NEVER the answer ("The lesion is located in the
   right kidney", "There are multiple lesions, all unilateral", "The lesion is not malignant"): an option
   text is accepted only as the whole response (or its whole first line or sentence, rule 3) or as an
   answer phrase's content.
A letter beyond the options (E with four options) -> unparseable "letter_out_of_range".

False premise (single_choice, yes_no, when ``rejecting`` is given)
==================================================================
After the rules above, a prose rejection of the premise is looked for:
* strong: "the (question's) premise … is/was/seems false|incorrect|wrong|invalid|mistaken|flawed|
  inaccurate|untrue|erroneous|not true|not correct|not valid|not supported|…" (not "is not false"),
  "the premise … does not|doesn't|cannot hold|apply|stand|be confirmed", "false/incorrect/… premise",
  "reject/challenge/dispute the premise", "no such <word>" ("No such lesion is present");
* weak: "there is/are/was/were no <word>" (not "no doubt/question/way/need/reason"), "no <1–4 words>
  is/are/was/were/can be/could be present|seen|visible|identified|shown|depicted|evident|found|detected|
  noted|appreciated|demonstrated", "I do not/don't/cannot see|identify|find|detect|visualise|
  appreciate|observe any|a|an <word>" (not the image/picture/scan/file), "does/do/did not exist|contain|
  have|harbour", "is/are not present|seen|…", "is/are absent|non-existent", "not present".
If the parse answered the rejecting letter, it stands. If it is not an answer (no_match, ambiguous,
abstained, out of range) and a rejection is found -> answered ``rejecting`` with method
"premise_rejection", also when other option texts are named in the rejection ("There is no cyst in
the spleen; the premise is false." with "spleen" an option). If it answered a different letter, a strong
rejection makes it "ambiguous" ("The premise is incorrect. Answer: A"), a weak one leaves it.
Without ``rejecting`` none of this applies.

JSON answers (choice types and short_text)
==========================================
Read first, before any other rule, as guided decoding produces them; also inside code fences (the
fence is removed) and before or after prose. The first JSON value (object or array, at most 16
candidates, each read up to 20,000 characters; a Python-style literal with single quotes and no double
quotes, ``{'answer': 'B'}``, is read too) that holds an answer:
* an object with a key (case-insensitive, spaces and hyphens as "_") final_answer, final_answers,
  answer, answers, choice, choices, selected_option, selected_options, selected, option, letter,
  letters (the first present in this order; also in a nested object up to three levels down, or in
  the only object of a one-element array);
* else an array of strings (the whole value, or the only array of strings an object holds, not under
  "options"/"option_list"/"all_options"/"candidates").
Its value: a string is read as an answer phrase's content (a letter, "B. liver", an option text, a yes/no
word, a ruled-out option -> no_match, an abstention -> abstained); an array of strings must be letters,
exact option texts or "B. <option B's text>" (sorted unique letters for multi_choice, [] allowed under an
answer key; several distinct letters -> ambiguous for single choice); true/false -> the "yes"/"no"
option. A value that names nothing, a number (never taken as an index) or null -> unparseable
"no_match"; an array of strings that are not all options found without an answer key is ignored (the
other rules decide). Method "json" for every answer read this way. Malformed JSON is skipped and the
other rules read the text; nothing raises. ``{"answer": "B", "bbox_2d": [...]}`` on a joint item gives
choice B and the box (below).

Multi-choice answers, in order
==============================
0. json — see "JSON answers": {"answers": ["A", "C"]}, ["liver", "spleen"], {"findings": ["liver"]}.
1. answer_phrase / answer_phrase_text — "Answer: B, D", "The correct options are A and C" (letters ->
   answer_phrase), "Final answer: hypodense, edema" (option texts -> answer_phrase_text), content as below
   (also a letter list followed by "because …"). Then a whole response such as "N/A" -> abstained.
2. none_selected — "None", "None of the above/options/them", "No correct option", "Neither", "Nothing"
   -> answered [] (unless that text is itself an option, which then matches as option text).
3. letter_list — letters only: "A, C", "A,C", "A and C", "A & C", "A; C", "(A)(C)", "A C", "a, c",
   "ACD" (concatenated, all distinct and in range); items "A. <text>\\nC. <text>" or "(A) x, (C) y"
   whose text is exactly that letter's option text (another option's text -> ambiguous); "Option B",
   "Options A and C", "A and C are correct"; a first line of letters only followed by an explanation.
   Unique letters are sorted. "A or C" -> ambiguous.
4. option_text — the whole response is option texts joined by commas, semicolons, "and", "&", "/" or
   newlines (longest option text first; a hyphen is no boundary).
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
``parse_answer_with_box(text, *, answer_type, options, image_size, box_format, prompt=None,
rejecting=None) -> (choice, box)``: after echo removal, the box is read from the whole response as under
"Boxes"; a JSON answer is read from the whole response too (``{"answer": "B", "bbox_2d": [10, 20, 50,
60]}`` is B and that box); otherwise the option is read as under "Choice answers" (with ``rejecting``)
from the response with every found box blanked, so "B (10, 20, 50, 60)" is B and that box, "Answer: B.
Box: [10,20,50,60]" likewise, "[10, 20, 50, 60]" alone is an unparseable choice ("empty") with a box,
and "B" alone is B with an unparseable box ("no_match").

Short text
==========
json — the string under an answer key of a JSON object ({"answer": "left lobe"}), normalised as below;
answer_phrase_text when it is the content of the last answer phrase ("The answer is: left lobe" -> "left
lobe"); free_text — lower-cased, whitespace collapsed, surrounding quotes and trailing punctuation
stripped; abstain_phrase for abstentions; nothing alphanumeric -> unparseable "empty".

Methods
=======
letter_only, letter_prefix, letter_mention, answer_phrase, answer_phrase_text, option_text,
yes_no_word, letter_list, none_selected, json, premise_rejection, box_pixel, box_unit, box_1000,
box_qwen, box_json, free_text (answered); abstain_phrase (abstained); empty, no_match, ambiguous,
letter_out_of_range, degenerate_box, needs_image_size (unparseable).
"""
from __future__ import annotations

from .echo import echo_matters
from .parse import parse_answer, parse_answer_with_box
from .types import FAMILIES, METHODS, OUTCOMES, ParsedAnswer, method_family

__all__ = ["FAMILIES", "echo_matters", "METHODS", "OUTCOMES", "ParsedAnswer", "method_family", "parse_answer",
           "parse_answer_with_box"]
