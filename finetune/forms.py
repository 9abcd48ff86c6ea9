"""The new-job form: a base model, a training set (a release, or item filters), a recipe, a budget, a seed and
the training settings people change most. Every other rule is finetune.services.job_create's."""
from __future__ import annotations

from django import forms

from workers.selectors import category_list, stage_list

from . import selectors
from .core.recipes import RECIPE_LABELS, RECIPES

# the training settings on the form (finetune.core.trainer.TrainConfig); empty = the service's default
SETTING_FIELDS = ("tokens_per_step", "lr", "eval_every", "patience")


class JobForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="empty: base model, recipe and seed")
    base_endpoint = forms.ModelChoiceField(
        queryset=selectors.base_model_choices(), label="Base model",
        help_text="active local transformers models (a model directory); fine-tuned models are not offered")
    release = forms.ModelChoiceField(
        queryset=selectors.release_choices(), required=False, empty_label="— none: the items filtered below —",
        label="Training set: a release", help_text="train on the release's train split (frozen item versions)")
    stage = forms.MultipleChoiceField(choices=(), required=False, widget=forms.CheckboxSelectMultiple,
                                      label="… or current approved items of these stages",
                                      help_text="without a release; none = every stage")
    category = forms.MultipleChoiceField(choices=(), required=False, label="… and these categories",
                                         help_text="none = every category")
    recipe = forms.ChoiceField(choices=[(r, RECIPE_LABELS[r]) for r in RECIPES], initial="stepwise")
    steps = forms.IntegerField(min_value=1, initial=100, label="Budget (optimizer steps)",
                               help_text="each step trains on the same number of tokens whatever the recipe")
    seed = forms.IntegerField(min_value=0, initial=0, help_text="data order, LoRA initialisation, dropout")
    tokens_per_step = forms.IntegerField(required=False, initial=2048, label="Tokens per step")
    lr = forms.FloatField(required=False, initial=1e-3, label="Learning rate")
    eval_every = forms.IntegerField(required=False, initial=10, label="Evaluate on val every … steps",
                                    help_text="0: never")
    patience = forms.IntegerField(required=False, initial=3, label="Patience (evaluations)",
                                  help_text="stop after this many evaluations without a better val loss; 0: never")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["stage"].choices = [(s.code, f"{s.code} {s.name}") for s in stage_list()]
        self.fields["category"].choices = [(c.code, c.name) for c in category_list(active_only=True)]

    def item_filters(self) -> dict:
        d = self.cleaned_data
        return {"stage": d.get("stage") or [], "category": d.get("category") or []}

    def config(self) -> dict:
        return {k: self.cleaned_data[k] for k in SETTING_FIELDS if self.cleaned_data.get(k) is not None}
