"""The release form (admins). Values are checked by releases.services.release_create (semver rule,
at least one item); the form only shapes them."""
from __future__ import annotations

from django import forms

from .selectors import INCLUDABLE

FILTERS = ("stage", "category", "modality", "source_dataset")
INCLUDE_LABELS = {"rejected": "rejected items", "ambiguous": "ambiguous items",
                  "open_case": "items with an open adjudication case"}


class ReleaseForm(forms.Form):
    version = forms.CharField(max_length=40, required=False,
                              help_text="MAJOR.MINOR.PATCH; blank: the semver rule picks the next one (major when "
                                        "items were removed or golds changed, minor when added, patch otherwise)")
    title = forms.CharField(max_length=200, required=False, help_text="blank: the default title")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 70}), required=False)
    license = forms.CharField(max_length=40, required=False, help_text="SPDX id; blank: CC-BY-4.0")
    stage = forms.ChoiceField(choices=(), required=False)
    category = forms.ChoiceField(choices=(), required=False)
    modality = forms.ChoiceField(choices=(), required=False)
    source_dataset = forms.ChoiceField(choices=(), required=False, label="Source dataset")
    include = forms.MultipleChoiceField(
        choices=[(r, INCLUDE_LABELS[r]) for r in INCLUDABLE], required=False, widget=forms.CheckboxSelectMultiple,
        label="Include anyway",
        help_text="left out unless ticked; the release reports them either way")

    def __init__(self, *args, choices: dict[str, list[tuple[str, str]]], **kwargs):
        super().__init__(*args, **kwargs)
        for name in FILTERS:
            self.fields[name].choices = [("", "any"), *choices.get(name, [])]

    def filters(self) -> dict:
        return {name: self.cleaned_data[name] for name in FILTERS if self.cleaned_data.get(name)}
