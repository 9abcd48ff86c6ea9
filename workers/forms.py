from __future__ import annotations

import json

from django import forms

from annotation.models import QAItem, VariantKind

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
    """A new run, every filter chosen from the real values (the stages, categories, statuses and
    modalities that exist) rather than typed; the page counts what the choices select as they change
    (static/js/run_form.js and GET /api/runs/preview/, which reads these same fields)."""

    name = forms.CharField(max_length=200)
    endpoints = forms.ModelMultipleChoiceField(queryset=selectors.endpoint_list(active_only=True),
                                               widget=forms.CheckboxSelectMultiple, label="Models")
    split = forms.ChoiceField(
        choices=RunSplit.choices, initial=RunSplit.TEST, required=False,
        help_text="patient-level split of the items' images. Benchmark runs use test: held-out patients that no "
                  "baseline was fitted on. all = every split, with results shown per split.")
    status = forms.MultipleChoiceField(choices=QAItem.Status.choices, required=False,
                                       widget=forms.CheckboxSelectMultiple, label="Item status",
                                       help_text="none = approved items only (what a benchmark run evaluates)")
    stage = forms.MultipleChoiceField(choices=(), required=False, widget=forms.CheckboxSelectMultiple,
                                      help_text="none = every stage")
    category = forms.MultipleChoiceField(choices=(), required=False, widget=forms.CheckboxSelectMultiple,
                                         help_text="none = every category")
    modality = forms.MultipleChoiceField(choices=(), required=False, widget=forms.CheckboxSelectMultiple,
                                         help_text="none = every modality")
    variant_kinds = forms.MultipleChoiceField(choices=VariantKind.choices, required=False,
                                              widget=forms.CheckboxSelectMultiple,
                                              help_text="none = every kind; clean is always included")
    allow_train_overlap = forms.BooleanField(
        required=False, label="Allow scoring fitted baselines on their training items",
        help_text="the prior baseline learned from the train split; a run over train or all splits that includes "
                  "it is refused unless this is ticked (the run's provenance then records it)")
    batch_size = forms.IntegerField(min_value=1, max_value=5000, initial=64)

    #: the fields that choose what is evaluated (the preview reads them; name and batch size change nothing)
    PREVIEW_FIELDS = ("endpoints", "split", "status", "stage", "category", "modality", "variant_kinds",
                      "allow_train_overlap")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["stage"].choices = [(s.code, f"{s.code} {s.name}") for s in selectors.stage_list()]
        self.fields["category"].choices = [(c.code, c.name) for c in selectors.category_list(active_only=True)
                                           .select_related("stage").order_by("stage__order", "order")]
        self.fields["modality"].choices = [(m, m) for m in selectors.modality_list()]

    @property
    def item_fields(self) -> list:
        """The filters on the items, in the order the page shows them."""
        return [self[name] for name in ("status", "stage", "category", "modality")]

    def clean_split(self) -> str:
        return self.cleaned_data.get("split") or RunSplit.TEST   # a post without a split gets the benchmark's

    def item_filters(self) -> dict:
        d = self.cleaned_data
        return {key: d.get(key) or [] for key in ("stage", "category", "modality", "status")}
