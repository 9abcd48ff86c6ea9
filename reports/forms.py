"""The report forms. Values are checked by reports.services (a title, at least one run, well-formed
criteria, a reason for a criteria change, the password); the forms only shape them."""
from __future__ import annotations

import json

from django import forms

from .document import SIGN_OFF_MEANINGS

CRITERIA_HELP = ('a JSON list, e.g. [{"metric": "chain_accuracy", "model": "*", "op": ">=", "threshold": 0.6}]; '
                 '"on": "lo" judges the lower end of the 95% interval (docs/reports.md lists the metrics)')


def _criteria(text: str):
    text = (text or "").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise forms.ValidationError(f"not valid JSON: {exc}") from None


class ReportForm(forms.Form):
    title = forms.CharField(max_length=200)
    runs = forms.MultipleChoiceField(choices=(), widget=forms.SelectMultiple(attrs={"size": 8}),
                                     help_text="the evaluation runs it reports on; runs still running may be "
                                               "chosen: write the criteria before their results exist")
    release = forms.ChoiceField(choices=(), required=False, help_text="the release the runs evaluated, if any")
    scope = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), required=False,
                            label="Scope and intended use")
    out_of_scope = forms.CharField(widget=forms.Textarea(attrs={"rows": 2, "cols": 80}), required=False,
                                   label="Out of scope")
    limitations = forms.CharField(widget=forms.Textarea(attrs={"rows": 2, "cols": 80}), required=False,
                                  label="Limitations (the author's)")
    criteria = forms.CharField(widget=forms.Textarea(attrs={"rows": 5, "cols": 80, "spellcheck": "false"}),
                               required=False, label="Acceptance criteria", help_text=CRITERIA_HELP)

    def __init__(self, *args, run_choices, release_choices, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["runs"].choices = run_choices
        self.fields["release"].choices = [("", "none: the runs' own item selection"), *release_choices]

    def clean_criteria(self):
        return _criteria(self.cleaned_data["criteria"])


class CriteriaForm(forms.Form):
    criteria = forms.CharField(widget=forms.Textarea(attrs={"rows": 6, "cols": 80, "spellcheck": "false"}),
                               required=False, label="Acceptance criteria", help_text=CRITERIA_HELP)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2, "cols": 80}), required=False,
                             help_text="why they change (required for every change after the first version)")

    def clean_criteria(self):
        return _criteria(self.cleaned_data["criteria"]) or []


class SignForm(forms.Form):
    meaning = forms.ChoiceField(choices=[(m, f"{m}: {statement}") for m, statement in SIGN_OFF_MEANINGS],
                                widget=forms.RadioSelect)
    password = forms.CharField(widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
                               strip=False, help_text="your password again: this is your electronic signature")
