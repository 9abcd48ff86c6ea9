"""Annotation's page filters (`{% load annotation_format %}`): records of the benchmark content as people
read them. Generic formatting lives in common (`medr2_format`)."""
from __future__ import annotations

from django import template

from annotation.ingest.deid_profile import describe_record

register = template.Library()


@register.filter
def deid_rows(record) -> list[tuple[str, str]]:
    """{% kv_table image.deid|deid_rows %}: what de-identification did, one row per action."""
    return describe_record(record or {})
