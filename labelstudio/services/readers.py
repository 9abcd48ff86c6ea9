"""Readers' own Label Studio organizations (docs/labelstudio.md, "Independent readers").

Label Studio Community shows every annotation of a task to every annotator of the project, and every
project of an organization to every member; it has one role. So a double read is independent only if
each reader is alone in an organization: `reader_workspace_ensure` creates it through Label Studio's
own Django (`labelstudio.server.LabelStudioServer.provision_reader`, in Label Studio's virtualenv),
with a service account whose API token the platform keeps (`ReaderWorkspace`), and every push, pull
and webhook of that reader's copy goes through that token (`workspace_client`)."""
from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import transaction

from audit.services import audit_record
from labelstudio.client import LabelStudioClient, LabelStudioRejected
from labelstudio.models import ReaderWorkspace
from labelstudio.server import LabelStudioServerError, server_from_env

Provisioner = Callable[..., dict]


def workspace_client(workspace: ReaderWorkspace) -> LabelStudioClient:
    """A client acting in the reader's organization (its service account's token)."""
    return LabelStudioClient(url=settings.LABEL_STUDIO_URL, api_key=workspace.ls_token,
                             timeout_s=settings.LABEL_STUDIO_TIMEOUT_S)


def _local_provisioner(email: str, *, password: str | None = None) -> dict:
    return server_from_env().provision_reader(email, password=password)


def reader_workspace_ensure(*, reader, actor, provisioner: Provisioner | None = None,
                            password: str | None = None) -> ReaderWorkspace:
    """The reader's workspace, provisioned in Label Studio the first time (idempotent there too).
    `password` (optional) sets their Label Studio password. Raises LabelStudioRejected when Label
    Studio cannot be provisioned from here (no local installation)."""
    existing = ReaderWorkspace.objects.filter(reader=reader).first()
    if existing is not None and password is None:
        return existing
    email = (reader.email or "").strip().lower()
    if not email:
        raise LabelStudioRejected(f"reader {reader.get_username()} has no email: Label Studio matches accounts by it")
    try:
        made = (provisioner or _local_provisioner)(email, password=password)
    except (LabelStudioServerError, OSError) as exc:
        raise LabelStudioRejected(
            f"cannot create a Label Studio organization for reader {reader.get_username()}: {exc}. "
            f"Run `manage.py labelstudio_reader --user {reader.get_username()}` where Label Studio is installed"
        ) from exc
    fields = dict(ls_email=made["email"], ls_user_id=made["user_id"], ls_organization_id=made["organization_id"],
                  ls_service_email=made["service_email"], ls_token=made["token"])
    with transaction.atomic():
        workspace, created = ReaderWorkspace.objects.update_or_create(reader=reader, defaults=fields)
        audit_record(actor=actor, action="labelstudio.reader.provision", target=workspace, after={
            "reader_id": reader.pk, "ls_user_id": workspace.ls_user_id, "created": created,
            "ls_organization_id": workspace.ls_organization_id, "password_set": password is not None})
    return workspace
