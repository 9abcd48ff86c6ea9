"""What `accounts` announces to the layers above it (they subscribe; accounts never imports them).

- `user_created(sender=User, user=..., actor=..., roles=[role values, sorted])`: a user was created,
  inside the creating transaction. The audit trail subscribes (audit/receivers.py) to record it.
"""
from django.dispatch import Signal

user_created = Signal()
