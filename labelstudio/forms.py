"""Forms for the Label Studio pages."""
from __future__ import annotations

from django import forms

from labelstudio import selectors


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
    category = forms.ModelChoiceField(queryset=selectors.category_choices(), required=False, to_field_name="code")
    limit = forms.IntegerField(min_value=1, max_value=20000, initial=50, help_text="at most this many tasks")
    maximum_annotations = forms.IntegerField(min_value=1, max_value=10, initial=2, label="Annotators per task")
    mode = forms.ChoiceField(choices=[("independent", "Independent read (no pre-filled boxes)"),
                                      ("correction", "Correction (pre-filled boxes to correct)")],
                             initial="independent", required=False)
    readers = forms.ModelMultipleChoiceField(queryset=None, required=False,
                                             widget=forms.CheckboxSelectMultiple)
    push_now = forms.BooleanField(required=False, initial=True, label="Push to Label Studio now")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["readers"].queryset = selectors.reader_candidates()

    def _filters(self) -> dict:
        d = self.cleaned_data
        return {name: d.get(name) or "" for name in ("modality", "body_region", "source_dataset")}

    def selected_images(self):
        if self.cleaned_data["source"] != "images":
            return None
        return selectors.batch_image_ids(**self._filters(), limit=self.cleaned_data["limit"])

    def selected_items(self):
        if self.cleaned_data["source"] != "items":
            return None
        category = self.cleaned_data.get("category")
        return selectors.batch_item_ids(category=category.code if category else "", **self._filters(),
                                        limit=self.cleaned_data["limit"])
