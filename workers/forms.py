from __future__ import annotations

import json

from django import forms

from annotation.models import VariantKind

from . import selectors
from .backends import backend_names
from .models import RunSplit


class EndpointForm(forms.Form):
    name = forms.SlugField(max_length=80, help_text="a short unique slug, e.g. llava-med-7b")
    display_name = forms.CharField(max_length=120, required=False)
    backend = forms.ChoiceField(choices=())
    parameters = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), initial="{}",
                                 help_text='JSON, e.g. {"path": "var/models/tiny-vlm"} or {"base_url": '
                                           '"http://127.0.0.1:8001/v1", "model": "m", "api_key_env": "MY_KEY"}')
    queue = forms.ChoiceField(choices=[("", "backend default"), ("gpu", "gpu"), ("cpu", "cpu")], required=False)
    prompt_template = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), initial="{prompt}")
    box_format = forms.ChoiceField(choices=[(v, v) for v in ("auto", "pixel", "unit", "norm1000")], initial="auto")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["backend"].choices = [(n, n) for n in backend_names()]

    def clean_parameters(self) -> dict:
        try:
            value = json.loads(self.cleaned_data["parameters"] or "{}")
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("must be a JSON object")
        return value


class RunForm(forms.Form):
    name = forms.CharField(max_length=200)
    endpoints = forms.ModelMultipleChoiceField(queryset=selectors.endpoint_list(active_only=True),
                                               widget=forms.CheckboxSelectMultiple, label="Models")
    stage = forms.MultipleChoiceField(choices=(), required=False, widget=forms.CheckboxSelectMultiple,
                                      help_text="none = every stage")
    category = forms.MultipleChoiceField(choices=(), required=False, help_text="none = every category")
    modality = forms.CharField(required=False, help_text="comma-separated, e.g. CT,MR; empty = all")
    variant_kinds = forms.MultipleChoiceField(choices=VariantKind.choices, required=False,
                                              widget=forms.CheckboxSelectMultiple,
                                              help_text="none = every kind; clean is always included")
    split = forms.ChoiceField(
        choices=RunSplit.choices, initial=RunSplit.TEST, required=False,
        help_text="patient-level split of the items' images. Benchmark runs use test: held-out patients that no "
                  "baseline was fitted on. all = every split, with results shown per split.")
    allow_train_overlap = forms.BooleanField(
        required=False, label="Allow scoring fitted baselines on their training items",
        help_text="the prior baseline learned from the train split; a run over train or all splits that includes "
                  "it is refused unless this is ticked (the run's provenance then records it)")
    batch_size = forms.IntegerField(min_value=1, max_value=5000, initial=64)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["stage"].choices = [(s.code, f"{s.code} {s.name}") for s in selectors.stage_list()]
        self.fields["category"].choices = [(c.code, c.name) for c in selectors.category_list(active_only=True)]

    def clean_split(self) -> str:
        return self.cleaned_data.get("split") or RunSplit.TEST   # a post without a split gets the benchmark's

    def item_filters(self) -> dict:
        d = self.cleaned_data
        modalities = [m.strip() for m in d.get("modality", "").split(",") if m.strip()]
        return {"stage": d.get("stage") or [], "category": d.get("category") or [], "modality": modalities}
