"""Forms for the Label Studio pages."""
from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from annotation.models import QAItem, TaskCategory


class AnnotationBatchForm(forms.Form):
    """A Label Studio batch: images (boxes) or current approved QA items (answer + boxes), chosen
    by filters, with its readers and how many of them annotate each task."""

    SOURCES = (("images", "Images: draw grounding boxes"), ("items", "QA items: answer and ground"))
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    source = forms.ChoiceField(choices=SOURCES, initial="images")
    modality = forms.CharField(required=False, max_length=16)
    body_region = forms.CharField(required=False, max_length=64)
    source_dataset = forms.CharField(required=False, max_length=200)
    category = forms.ModelChoiceField(queryset=TaskCategory.objects.filter(is_active=True).order_by("order"),
                                      required=False, to_field_name="code")
    limit = forms.IntegerField(min_value=1, max_value=20000, initial=50, help_text="at most this many tasks")
    maximum_annotations = forms.IntegerField(min_value=1, max_value=10, initial=2, label="Annotators per task")
    readers = forms.ModelMultipleChoiceField(queryset=None, required=False,
                                             widget=forms.CheckboxSelectMultiple)
    push_now = forms.BooleanField(required=False, initial=True, label="Push to Label Studio now")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["readers"].queryset = (get_user_model().objects.filter(
            is_active=True, groups__name__in=["annotator", "adjudicator"]).distinct().order_by("username"))

    def selected_images(self):
        from annotation.models import Image

        if self.cleaned_data["source"] != "images":
            return None
        d = self.cleaned_data
        qs = Image.objects.all()
        for name in ("modality", "body_region", "source_dataset"):
            if d.get(name):
                qs = qs.filter(**{name: d[name]})
        return list(qs.order_by("pk").values_list("pk", flat=True)[: d["limit"]])

    def selected_items(self):
        if self.cleaned_data["source"] != "items":
            return None
        d = self.cleaned_data
        qs = QAItem.objects.filter(is_current=True, status="approved")
        if d.get("category"):
            qs = qs.filter(category=d["category"])
        for name in ("modality", "body_region", "source_dataset"):
            if d.get(name):
                qs = qs.filter(**{f"chain__image__{name}": d[name]})
        return list(qs.order_by("pk").values_list("pk", flat=True)[: d["limit"]])
