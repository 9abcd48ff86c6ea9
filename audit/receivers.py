"""What the audit trail records when a lower layer announces something (signals, never imports upward)."""
from __future__ import annotations

from django.dispatch import receiver

from accounts.signals import user_created

from .services import audit_record


@receiver(user_created, dispatch_uid="audit.record_user_created")
def record_user_created(sender, *, user, actor, roles: list[str], **kwargs) -> None:
    """A new user and their roles, in the creating transaction (the password never enters the trail)."""
    audit_record(actor=actor, action="accounts.user.create", target=user,
                 after={"username": user.username, "email": user.email, "roles": roles})
