"""Celery adapter for release builds: id in, one service call; quiet when the release is gone or done.
A worker killed mid-build is redelivered (acks late) and the build runs again from the start: the half
folder was never visible, and the result is byte-identical."""
from __future__ import annotations

from celery import shared_task
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from .models import Release
from .services import release_build


@shared_task(name="releases.build", acks_late=True, reject_on_worker_lost=True)
def release_build_task(release_id: int, actor_id: int | None = None) -> dict:
    release = Release.objects.filter(pk=release_id).first()
    if release is None:
        return {"release_id": release_id, "status": "missing"}
    actor = get_user_model().objects.filter(pk=actor_id).first() if actor_id else None
    try:
        release = release_build(release_id=release_id, actor=actor)
    except ValidationError as exc:   # recorded on the release (failed, with its reason) and audited
        return {"release_id": release_id, "status": "failed", "error": "; ".join(exc.messages)}
    return {"release_id": release_id, "status": release.status, "digest": release.digest}
