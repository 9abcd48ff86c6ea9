"""Forms for curators: editing an item (a new version) and a category definition."""
from __future__ import annotations

import json

from django import forms
from django.core.exceptions import ValidationError

from annotation.chains import category_errors
from annotation.models import AnswerType, QAItem, TaskCategory
from annotation.services.chains import category_payload


class ItemEditForm(forms.Form):
    question = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}))
    options = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6, "cols": 50}),
                              help_text="one option per line, in the order shown to models")
    gold_answer = forms.CharField(help_text="single choice / yes-no: the option text; multi-select: one per line; "
                                            "box: x0, y0, x1, y1 in pixels",
                                  widget=forms.Textarea(attrs={"rows": 2, "cols": 50}))
    reason = forms.CharField(max_length=300, help_text="why this edit (kept with the new version)")

    def __init__(self, *args, item: QAItem, **kwargs):
        self.item = item
        initial = kwargs.setdefault("initial", {})
        initial.setdefault("question", item.question)
        initial.setdefault("options", "\n".join(str(o) for o in item.options))
        gold = item.gold_answer
        if item.category.answer_type == AnswerType.MULTI_CHOICE:
            initial.setdefault("gold_answer", "\n".join(gold))
        elif item.category.answer_type == AnswerType.BOX:
            initial.setdefault("gold_answer", ", ".join(f"{v:g}" for v in gold))
        else:
            initial.setdefault("gold_answer", gold)
        super().__init__(*args, **kwargs)

    def clean_options(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["options"].splitlines() if line.strip()]

    def clean_gold_answer(self):
        raw = self.cleaned_data["gold_answer"].strip()
        kind = self.item.category.answer_type
        if kind == AnswerType.MULTI_CHOICE:
            return [line.strip() for line in raw.splitlines() if line.strip()]
        if kind == AnswerType.BOX:
            try:
                values = [float(v) for v in raw.replace("[", "").replace("]", "").split(",")]
            except ValueError:
                raise ValidationError("a box is four numbers: x0, y0, x1, y1") from None
            if len(values) != 4:
                raise ValidationError("a box is four numbers: x0, y0, x1, y1")
            return values
        return raw

    def changes(self) -> dict:
        data = self.cleaned_data
        return {"question": data["question"].strip(), "options": data["options"], "gold_answer": data["gold_answer"]}


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
