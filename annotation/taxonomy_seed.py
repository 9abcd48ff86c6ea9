"""The working taxonomy: 4 clinical stages and 31 task categories (DESIGN.md).

This is only the *initial* data, loaded by migration 0002 and by `seed_taxonomy()`;
after that the rows are the truth and curators edit them (Django admin).
Prompt templates use `{placeholders}` filled by the chain generator.
"""

STAGES = [
    ("S1", 1, "Perception: image & anatomy", "What is this image and what anatomy does it show?"),
    ("S2", 2, "Detection & localization", "Is there an abnormality, how many, and where?"),
    ("S3", 3, "Characterization", "What does the finding look like?"),
    ("S4", 4, "Diagnosis & decision", "What is it, and what should happen next?"),
]

# (code, name, stage, answer_type, prompt_template)
CATEGORIES = [
    # S1 perception (8)
    ("modality", "Modality", "S1", "single_choice", "What imaging modality was used to acquire this image?"),
    ("sequence-phase-window", "Sequence / phase / window", "S1", "single_choice",
     "Which contrast phase or MR sequence does this image show?"),
    ("plane-view", "Plane / view", "S1", "single_choice", "In which plane is this image displayed?"),
    ("body-region", "Body region", "S1", "single_choice", "Which body region is shown?"),
    ("organ-identification", "Organ identification", "S1", "single_choice",
     "Which organ is marked or most prominent in this image?"),
    ("anatomy-box", "Anatomical structure box", "S1", "box", "Draw a box around the {organ}."),
    ("laterality-orientation", "Laterality / orientation", "S1", "single_choice",
     "On which side of the patient is {structure} located?"),
    ("image-quality", "Image quality / artifact", "S1", "single_choice", "What best describes the image quality?"),
    # S2 detection & localization (8)
    ("normal-vs-abnormal", "Normal vs abnormal", "S2", "yes_no", "Is there any abnormality in this image?"),
    ("finding-presence", "Finding presence", "S2", "yes_no", "Is there a {finding} in the {organ}?"),
    ("lesion-count", "Lesion count", "S2", "single_choice", "How many {finding}s are visible in the {organ}?"),
    ("lesion-location", "Lesion location", "S2", "single_choice", "Where is {lesion} located?"),
    ("lesion-grounding", "Lesion grounding", "S2", "box", "Draw a box around {lesion}."),
    ("finding-in-box", "Finding inside a given box", "S2", "yes_no", "Is there a {finding} inside the marked box?"),
    ("box-text-match", "Box-text match", "S2", "yes_no", "Does the marked box contain the {structure}?"),
    ("list-findings", "List all findings", "S2", "multi_choice", "Select every finding present in this image."),
    # S3 characterization (8)
    ("size", "Size", "S3", "single_choice", "What is the approximate largest diameter of {lesion}?"),
    ("shape", "Shape", "S3", "single_choice", "What is the shape of {lesion}?"),
    ("margin", "Margin", "S3", "single_choice", "How would you describe the margin of {lesion}?"),
    ("density-intensity", "Density / intensity / echogenicity", "S3", "single_choice",
     "What is the {density_term} of {lesion} relative to the surrounding tissue?"),
    ("internal-composition", "Internal composition", "S3", "single_choice",
     "What is the internal composition of {lesion}?"),
    ("enhancement-relation", "Enhancement / relation to neighbours", "S3", "single_choice",
     "What is the contrast enhancement pattern of {lesion}?"),
    ("distribution", "Distribution", "S3", "single_choice", "How are the abnormal findings in this image distributed?"),
    ("severity", "Severity", "S3", "single_choice", "How severe is {lesion}?"),
    # S4 diagnosis & decision (7)
    ("diagnosis", "Diagnosis", "S4", "single_choice", "What is the most likely diagnosis of {lesion}?"),
    ("rule-out-differential", "Ruling out a differential", "S4", "single_choice",
     "Which of these diagnoses is least likely for {lesion}?"),
    ("benign-vs-malignant", "Benign vs malignant", "S4", "single_choice",
     "Is {lesion} more likely benign or malignant?"),
    ("grade-stage", "Grade / stage", "S4", "single_choice", "What grade best fits {lesion}?"),
    ("supporting-finding", "Supporting finding", "S4", "single_choice",
     "Which finding in this image best supports the most likely diagnosis of {lesion}?"),
    ("report-verification", "Report-statement verification", "S4", "yes_no",
     "Is this report statement correct: \"{statement}\"?"),
    ("next-step", "Next step", "S4", "single_choice", "What is the most appropriate next step for {lesion}?"),
]


def seed_taxonomy(Stage, TaskCategory, *, with_rules: bool = False) -> None:
    """Create missing stages and categories (idempotent; never overwrites curator edits).
    Migration 0002 runs it without rules (0004 adds them); tests re-seed a flushed database with them."""
    stages = {}
    for code, order, name, description in STAGES:
        stages[code], _ = Stage.objects.get_or_create(
            code=code, defaults={"order": order, "name": name, "description": description}
        )
    rules = {}
    if with_rules:
        # lazy: annotation.chains.definitions imports CATEGORIES from this module (an import cycle),
        # and the migrations that import this module must not need the chain rules
        from annotation.chains.definitions import DEFAULT_RULES as rules
    for order, (code, name, stage, answer_type, template) in enumerate(CATEGORIES):
        TaskCategory.objects.get_or_create(
            code=code,
            defaults={"name": name, "stage": stages[stage], "answer_type": answer_type,
                      "prompt_template": template, "order": order, **({"rule": rules[code]} if code in rules else {})},
        )
