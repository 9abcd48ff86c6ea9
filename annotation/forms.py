"""Forms for curators: editing an item (a new version, its gold picked or drawn) and a category definition."""
from __future__ import annotations

import json

from django import forms
from django.core.exceptions import ValidationError

from annotation.chains import category_errors
from annotation.models import AnswerType, QAItem, TaskCategory
from annotation.services.chains import category_payload
from annotation.services.qa import gold_errors

BOX_CORNERS = (("x0", "left (x0)"), ("y0", "top (y0)"), ("x1", "right (x1)"), ("y1", "bottom (y1)"))
CHOICE_TYPES = (AnswerType.SINGLE_CHOICE, AnswerType.YES_NO, AnswerType.MULTI_CHOICE)


class TextListField(forms.Field):
    """Every value posted under one name (checkboxes), as stripped non-empty strings."""

    widget = forms.CheckboxSelectMultiple

    def to_python(self, value) -> list[str]:
        return [str(v).strip() for v in (value or []) if str(v).strip()]


class ItemEditForm(forms.Form):
    """A new version of an item. The gold is picked, not typed: radio buttons for single-choice and
    yes / no questions, checkboxes for multi-select, four pixel fields for a box (filled by drawing on
    the viewer: static/js/item_edit.js), a text field only for short-text answers. What is wrong with
    the gold is said with the service's own words (annotation.services.qa.gold_errors)."""

    question = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}))
    options = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6, "cols": 60}),
                              help_text="one option per line, in the order shown to models; the choices below "
                                        "follow as you type")
    reason = forms.CharField(max_length=300, widget=forms.TextInput(attrs={"size": 80}),
                             help_text="why this edit (kept with the new version)")

    def __init__(self, *args, item: QAItem, **kwargs):
        self.item = item
        self.answer_type = item.category.answer_type
        self.image = item.chain.image
        initial = kwargs.setdefault("initial", {})
        initial.setdefault("question", item.question)
        initial.setdefault("options", "\n".join(str(o) for o in item.options))
        super().__init__(*args, **kwargs)
        kind, gold = self.answer_type, item.gold_answer
        if kind not in (AnswerType.SINGLE_CHOICE, AnswerType.MULTI_CHOICE):
            del self.fields["options"]   # yes / no has its two fixed options; box and short text have none
        if kind in (AnswerType.SINGLE_CHOICE, AnswerType.YES_NO):
            self.fields["gold_answer"] = forms.CharField(label="Gold answer", widget=forms.RadioSelect,
                                                         error_messages={"required": "click the correct option"})
            self.initial.setdefault("gold_answer", gold)
        elif kind == AnswerType.MULTI_CHOICE:
            self.fields["gold_answer"] = TextListField(label="Correct options",
                                                       error_messages={"required": "pick at least one correct option"})
            self.initial.setdefault("gold_answer", list(gold) if isinstance(gold, list) else [gold])
        elif kind == AnswerType.BOX:
            for key, label in BOX_CORNERS:
                self.fields[f"box_{key}"] = forms.FloatField(
                    label=label, widget=forms.NumberInput(attrs={"step": "0.1", "min": 0, "inputmode": "decimal"}))
            for key, value in zip(("x0", "y0", "x1", "y1"), gold if isinstance(gold, list) else [], strict=False):
                self.initial.setdefault(f"box_{key}", f"{value:g}")
        else:
            self.fields["gold_answer"] = forms.CharField(label="Gold answer", max_length=500)
            self.initial.setdefault("gold_answer", gold)
        # the reason comes last on the page
        self.order_fields(["question", "options", "gold_answer", *(f"box_{k}" for k, _ in BOX_CORNERS), "reason"])

    # --- what the template shows ---------------------------------------------------------------
    @property
    def shown_options(self) -> list[str]:
        """The options as the curator last saw them: the posted ones after a refused save."""
        if self.answer_type == AnswerType.YES_NO:
            return ["yes", "no"]
        if self.is_bound and "options" in self.fields:
            return _lines(self.data.get("options", ""))
        return [str(o) for o in self.item.options]

    @property
    def gold_choices(self) -> list[dict]:
        """One choice per option: its letter, its text and whether it is checked."""
        if self.answer_type not in CHOICE_TYPES:
            return []
        if self.is_bound:
            checked = set(self.data.getlist("gold_answer")) if hasattr(self.data, "getlist") else \
                set(_as_list(self.data.get("gold_answer")))
        else:
            checked = {str(g) for g in _as_list(self.initial.get("gold_answer"))}
        return [{"letter": chr(65 + n) if n < 26 else str(n + 1), "value": o, "checked": o in checked}
                for n, o in enumerate(self.shown_options)]

    @property
    def box_fields(self) -> list:
        return [self[f"box_{k}"] for k, _ in BOX_CORNERS] if self.answer_type == AnswerType.BOX else []

    # --- cleaning --------------------------------------------------------------------------------
    def clean_options(self) -> list[str]:
        return _lines(self.cleaned_data["options"])

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        gold = self._gold(data)
        problems = gold_errors(answer_type=self.answer_type, options=self._options(data), gold_answer=gold,
                               image=self.image)
        if problems:
            self.add_error(None if self.answer_type == AnswerType.BOX else "gold_answer", problems)
        else:
            data["gold_answer"] = gold
        return data

    def _options(self, data) -> list:
        if self.answer_type == AnswerType.YES_NO:
            return ["yes", "no"]
        return data["options"] if "options" in self.fields else list(self.item.options)

    def _gold(self, data):
        if self.answer_type == AnswerType.BOX:
            return [data[f"box_{k}"] for k, _ in BOX_CORNERS]
        if self.answer_type == AnswerType.MULTI_CHOICE:   # in the options' order, as the generator stores it
            chosen = set(data["gold_answer"])
            return [o for o in self._options(data) if o in chosen] + \
                [g for g in data["gold_answer"] if g not in self._options(data)]
        return data["gold_answer"].strip()

    def changes(self) -> dict:
        data = self.cleaned_data
        return {"question": data["question"].strip(), "options": self._options(data),
                "gold_answer": data["gold_answer"]}


def _lines(text: str) -> list[str]:
    return [line.strip() for line in str(text or "").splitlines() if line.strip()]


def _as_list(value) -> list:
    if value in (None, ""):
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


class CategoryEditForm(forms.ModelForm):
    """Curators edit a category as data; the definition is validated before it is saved."""

    rule = forms.CharField(widget=forms.Textarea(attrs={"rows": 16, "cols": 90, "class": "mono"}),
                           help_text="JSON; `kind` names the derivation, the rest are its parameters")
    alt_templates = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "cols": 90}),
                                    help_text="further phrasings, one per line")

    class Meta:
        model = TaskCategory
        fields = ["name", "prompt_template", "alt_templates", "rule", "is_active", "description"]
        widgets = {"prompt_template": forms.TextInput(attrs={"size": 90})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["rule"] = json.dumps(self.instance.rule, indent=2, ensure_ascii=False)
            self.initial["alt_templates"] = "\n".join(self.instance.alt_templates)

    def clean_rule(self):
        try:
            value = json.loads(self.cleaned_data["rule"])
        except ValueError as exc:
            raise ValidationError(f"not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ValidationError("the rule is a JSON object")
        return value

    def clean_alt_templates(self):
        return [line.strip() for line in self.cleaned_data["alt_templates"].splitlines() if line.strip()]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        candidate = TaskCategory(code=data.get("code", self.instance.code),
                                 stage=data.get("stage", getattr(self.instance, "stage", None)),
                                 answer_type=data.get("answer_type", self.instance.answer_type),
                                 name=data.get("name", ""), prompt_template=data.get("prompt_template", ""),
                                 alt_templates=data.get("alt_templates", []), rule=data.get("rule", {}))
        if candidate.stage is None:
            return data  # the stage field reports its own error
        problems = category_errors(category_payload(candidate))
        if problems:
            raise ValidationError([f"invalid category definition: {p}" for p in problems])
        return data


class CategoryCreateForm(CategoryEditForm):
    """A new category: code, stage and answer type are chosen once, at creation."""

    class Meta(CategoryEditForm.Meta):
        fields = ["code", "stage", "answer_type", *CategoryEditForm.Meta.fields]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial.setdefault("rule", "{}")


def parse_id_list(text: str, *, limit: int = 100_000) -> list[int]:
    """ "12, 15-18 40" -> [12, 15, 16, 17, 18, 40]; ValidationError naming what is not an id or a range."""
    ids: list[int] = []
    for token in text.replace(",", " ").split():
        low, _, high = token.partition("-")
        if not low.isdigit() or (high and not high.isdigit()) or int(low) < 1:
            raise ValidationError(f"{token[:20]!r} is not an image id or a range such as 15-18")
        first, last = int(low), int(high or low)
        if last < first or last - first >= limit or last > 2**63 - 1:
            raise ValidationError(f"{token[:20]!r} is not a range of at most {limit:,} ids")
        ids.extend(range(first, last + 1))
        if len(ids) > limit:
            raise ValidationError(f"name at most {limit:,} images at once")
    return ids


class ImageAssignForm(forms.Form):
    """A curator gives a reader images: by ids and ranges, and/or by filters (every filter given must match)."""

    user = forms.ChoiceField(label="Reader")
    action = forms.ChoiceField(choices=[("assign", "Assign"), ("unassign", "Unassign")], initial="assign",
                               widget=forms.RadioSelect)
    ids = forms.CharField(label="Image ids", required=False, max_length=20_000,
                          help_text="e.g. 12, 15-18 (leave empty to use the filters alone)")
    modality = forms.ChoiceField(required=False)
    body_region = forms.ChoiceField(required=False, label="Body region")
    source_format = forms.ChoiceField(required=False, label="Source format")
    split_group = forms.CharField(required=False, max_length=64, label="Patient group (split group)")
    import_batch = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1, label="Import batch")

    def __init__(self, *args, readers, choices: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["user"].choices = [("", "choose a reader")] + [
            (u.username, f"{u.get_full_name() or u.username} ({u.username}, {u.n_assigned} assigned)") for u in readers]
        for name in ("modality", "body_region", "source_format"):
            self.fields[name].choices = [("", "any")] + [(v, v) for v in choices.get(name, [])]

    def clean_ids(self) -> list[int]:
        return parse_id_list(self.cleaned_data.get("ids") or "")

    def filters(self) -> dict:
        return {k: self.cleaned_data.get(k) for k in ("modality", "body_region", "source_format", "split_group",
                                                      "import_batch") if self.cleaned_data.get(k) not in (None, "")}
