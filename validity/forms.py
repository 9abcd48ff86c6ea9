from django import forms

from .shortcuts import EVALUABLE_SPLITS


class AuditForm(forms.Form):
    """Start an audit; values are validated by the service (unknown ones are refused there)."""

    status = forms.CharField(required=False, initial="approved")
    stage = forms.CharField(required=False)
    category = forms.CharField(required=False, help_text="comma-separated category codes")
    modality = forms.CharField(required=False)
    source_dataset = forms.CharField(required=False)
    split = forms.ChoiceField(choices=[(s, s) for s in EVALUABLE_SPLITS], initial="test")

    def filters(self) -> dict:
        return {k: v for k, v in self.cleaned_data.items() if k != "split" and v}
