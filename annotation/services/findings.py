"""Findings and their grounding boxes."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import Finding, GroundingBox, Image
from audit.services import audit_record


def validate_box(image: Image, box: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """Pixel box (x0, y0, x1, y1), x1/y1 exclusive, must lie inside the image and have area.
    Out-of-bounds boxes are rejected, never clipped."""
    try:
        x0, y0, x1, y1 = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ValidationError("a box is four numbers: x0, y0, x1, y1") from None
    if not (x1 > x0 and y1 > y0):
        raise ValidationError(f"box ({x0}, {y0}, {x1}, {y1}) has no area: need x1 > x0 and y1 > y0")
    if x0 < 0 or y0 < 0 or x1 > image.width or y1 > image.height:
        raise ValidationError(
            f"box ({x0}, {y0}, {x1}, {y1}) lies outside the {image.width}x{image.height} image"
        )
    return x0, y0, x1, y1


def finding_create(
    *, image: Image, kind: str, label: str, actor, source: str, attributes: dict | None = None,
    box: tuple[float, float, float, float] | None = None, box_label: str = "",
) -> Finding:
    xyxy = validate_box(image, box) if box is not None else None
    with transaction.atomic():
        finding = Finding.objects.create(
            image=image, kind=kind, label=label, attributes=attributes or {}, source=source,
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
        )
        box_row = None
        if xyxy is not None:
            box_row = GroundingBox.objects.create(
                finding=finding, image=image, x0=xyxy[0], y0=xyxy[1], x1=xyxy[2], y1=xyxy[3],
                label=box_label or label, source=source,
                author=actor if getattr(actor, "is_authenticated", False) else None,
            )
        audit_record(actor=actor, action="annotation.finding.create", target=finding, after={
            "image_id": image.pk, "kind": kind, "label": label, "attributes": attributes or {},
            "source": source, "box": list(xyxy) if xyxy else None, "box_id": box_row.pk if box_row else None,
        })
    return finding
