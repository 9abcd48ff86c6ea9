"""The audit of accounts, wherever they change, and of sign-in (docs/security.md, "Accounts in the audit trail").

Row-level watchers on Django's model signals record every change to users, role groups, memberships
(`user.groups`), permissions and API tokens that no caller announced itself: Django admin's password form,
`manage.py shell`, `manage.py drf_create_token`, `createsuperuser`, an API. Callers that write one event of
their own (`accounts.services.user_create`, the audited Django admin) wrap the write in
`accounts.signals.announced()` and the watchers stay quiet. The actor is the signed-in user of the current
request (`common.middleware.current_request`); outside a request the actor is None ("system") and the event
says which process made the change: `"via": {"command": "manage.py drf_create_token"}`.

Sign-in: `auth.login`, `auth.logout`, `auth.login.failed` (the username tried and the address, never the
password), `auth.lockout` (django-axes locked a username + address). Refusals: every 403 is `auth.refused`
(path, method, the user's roles), at most one event per user (or address) and path a minute; the next one
says how many were left unrecorded (`suppressed_before`). Token keys never enter the trail: a token is
named by its user's id.
"""
from __future__ import annotations

import hashlib
import logging
import sys
from pathlib import Path

from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete, pre_save
from rest_framework.authtoken.models import Token, TokenProxy

from accounts.roles import user_roles
from accounts.security import client_ip, cooloff_minutes
from accounts.signals import is_announced
from common.middleware import current_request, request_refused

from .services import audit_record

log = logging.getLogger(__name__)
User = get_user_model()
USER_FIELDS = ("username", "email", "first_name", "last_name", "is_active", "is_staff", "is_superuser")
REFUSAL_WINDOW_S = 60
LOCKOUT_WINDOW_S = 60


# --- who and from where ----------------------------------------------------------------------------

def process_source() -> str:
    """How this process was started: "manage.py drf_create_token", "manage.py shell", "celery"."""
    argv = sys.argv or [""]
    name = Path(argv[0]).name
    if name in ("manage.py", "django-admin") and len(argv) > 1:
        return f"manage.py {argv[1]}"
    return name or "python"


def _actor_and_via():
    request = current_request()
    if request is not None:
        user = getattr(request, "user", None)
        actor = user if user is not None and user.is_authenticated else None
        return actor, {"path": request.path, "method": request.method}
    return None, {"command": process_source()}


def _record(action: str, *, actor="current", **fields) -> None:
    via_actor, via = _actor_and_via()
    if actor == "current":
        actor = via_actor
    after = dict(fields.pop("after", None) or {})
    after.setdefault("via", via)
    with transaction.atomic():
        audit_record(actor=actor, action=action, after=after, **fields)


def window_keys(key: str) -> tuple[str, str]:
    """The cache keys of a rate-limited event: (recorded less than a window ago, repeats since)."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"medr2:audit:{digest}:gate", f"medr2:audit:{digest}:n"


def _first_in_window(key: str, seconds: int) -> int | None:
    """None while an event with this key was recorded less than `seconds` ago (the repeat is only counted);
    otherwise the number of repeats left unrecorded since that event. Per cache (docs/security.md)."""
    gate, count = window_keys(key)
    if cache.add(gate, 1, seconds):
        suppressed = cache.get(count, 0)
        cache.delete(count)
        return suppressed
    try:
        cache.incr(count)
    except ValueError:
        cache.set(count, 1, 24 * 3600)
    return None


# --- users -------------------------------------------------------------------------------------------

def _user_state(user) -> dict:
    return {f: getattr(user, f) for f in USER_FIELDS}


def _only_last_login(update_fields) -> bool:
    return update_fields is not None and set(update_fields) <= {"last_login"}


def _user_pre_save(sender, instance, raw=False, update_fields=None, **kwargs):
    if raw or is_announced() or instance.pk is None or _only_last_login(update_fields):
        return
    old = sender._default_manager.filter(pk=instance.pk).first()
    if old is not None:
        instance._medr2_audit_before = (_user_state(old), old.password)


def _user_post_save(sender, instance, created, raw=False, update_fields=None, **kwargs):
    if raw or is_announced() or _only_last_login(update_fields):
        return
    if created:
        _record("auth.user.create", target=instance, after=_user_state(instance))
        return
    state, password = getattr(instance, "_medr2_audit_before", (None, None))
    if state is None:
        return
    del instance._medr2_audit_before
    now = _user_state(instance)
    before = {k: v for k, v in state.items() if now[k] != v}
    after = {k: now[k] for k in before}
    if password != instance.password:       # the hash itself never enters the trail
        before["password"], after["password"] = "(previous)", "changed"
    if after:
        _record("auth.user.change", target=instance, before=before, after=after)


def _user_pre_delete(sender, instance, **kwargs):
    if is_announced():
        return
    instance._medr2_audit_groups = sorted(instance.groups.values_list("name", flat=True))


def _user_post_delete(sender, instance, **kwargs):
    if is_announced():
        return
    before = {**_user_state(instance), "groups": getattr(instance, "_medr2_audit_groups", [])}
    _record("auth.user.delete", object_type="auth.user", object_id=instance.pk, before=before, after=None)


# --- role groups -------------------------------------------------------------------------------------

def _members(group) -> list[str]:
    return sorted(group.user_set.values_list("username", flat=True))


def _group_pre_save(sender, instance, raw=False, **kwargs):
    if raw or is_announced() or instance.pk is None:
        return
    instance._medr2_audit_name = sender._default_manager.filter(pk=instance.pk).values_list("name", flat=True).first()


def _group_post_save(sender, instance, created, raw=False, **kwargs):
    if raw or is_announced():
        return
    if created:
        _record("auth.group.create", target=instance, after={"name": instance.name})
        return
    old = getattr(instance, "_medr2_audit_name", None)
    if old is not None and old != instance.name:
        members = list(instance.user_set.values_list("pk", "username"))
        _record("auth.group.change", target=instance, before={"name": old},
                after={"name": instance.name, "members": sorted(name for _, name in members)},
                objects=[("auth.user", pk) for pk, _ in members])


def _group_pre_delete(sender, instance, **kwargs):
    if is_announced():
        return
    instance._medr2_audit_members = list(instance.user_set.values_list("pk", "username"))


def _group_post_delete(sender, instance, **kwargs):
    if is_announced():
        return
    members = getattr(instance, "_medr2_audit_members", [])
    _record("auth.group.delete", object_type="auth.group", object_id=instance.pk, after=None,
            before={"name": instance.name, "members": sorted(name for _, name in members)},
            objects=[("auth.user", pk) for pk, _ in members])


# --- memberships and permissions (many-to-many) --------------------------------------------------------

def _name(obj) -> str:
    if isinstance(obj, Permission):
        return f"{obj.content_type.app_label}.{obj.codename}"
    return getattr(obj, "username", None) or getattr(obj, "name", None) or str(obj.pk)


RELATIONS = {   # through model -> the relation's name seen from each side (forward, reverse)
    User.groups.through: ("groups", "members"),
    User.user_permissions.through: ("permissions", "users"),
    Group.permissions.through: ("permissions", "groups"),
}


def _related_pks(through, instance, model) -> set:
    src = next(f.name for f in through._meta.fields if f.related_model is type(instance)._meta.concrete_model)
    dst = next(f.attname for f in through._meta.fields if f.related_model is model and f.name != src)
    return set(through._default_manager.filter(**{src: instance.pk}).values_list(dst, flat=True))


def _m2m_changed(sender, instance, action, reverse, model, pk_set, **kwargs):
    if sender not in RELATIONS or is_announced():
        return
    if action == "pre_clear":
        instance._medr2_audit_cleared = _related_pks(sender, instance, model)
        return
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    changed = set(pk_set or ()) if action != "post_clear" else getattr(instance, "_medr2_audit_cleared", set())
    if not changed:
        return
    names = sorted(_name(o) for o in model._default_manager.filter(pk__in=changed))
    now = sorted(_name(o) for o in model._default_manager.filter(pk__in=_related_pks(sender, instance, model)))
    relation = RELATIONS[sender][1 if reverse else 0]
    verb = "added" if action == "post_add" else "removed"
    label = model._meta.label_lower
    _record(f"{instance._meta.label_lower}.{relation}.change", target=instance,
            after={verb: names, relation: now}, objects=[(label, pk) for pk in sorted(changed)])


# --- API tokens --------------------------------------------------------------------------------------

def _token_user(token) -> str:
    try:
        return token.user.get_username()
    except User.DoesNotExist:
        return ""


def _token_post_save(sender, instance, created, raw=False, **kwargs):
    if raw or is_announced():
        return
    _record("authtoken.token.create" if created else "authtoken.token.change", object_type="authtoken.token",
            object_id=instance.user_id, after={"user": _token_user(instance)})


def _token_post_delete(sender, instance, **kwargs):
    if is_announced():
        return
    _record("authtoken.token.delete", object_type="authtoken.token", object_id=instance.user_id,
            before={"user": _token_user(instance)}, after=None)


# --- sign-in -----------------------------------------------------------------------------------------

def _login(sender, request, user, **kwargs):
    _record("auth.login", actor=user, target=user, after={"ip": client_ip(request)})


def _logout(sender, request, user, **kwargs):
    if user is not None and user.is_authenticated:
        _record("auth.logout", actor=user, target=user, after={"ip": client_ip(request)})


def _login_failed(sender, credentials, request=None, **kwargs):
    locked = bool(getattr(request, "axes_locked_out", False))
    failures = getattr(request, "axes_failures_since_start", None)
    if locked and failures is not None and failures > settings.AXES_FAILURE_LIMIT:
        return      # already locked out before this attempt: `auth.lockout` counts it
    username = str(credentials.get("username") or "")[:150]
    known = User._default_manager.filter(username=username).values_list("pk", flat=True).first()
    _record("auth.login.failed", actor=None, object_type="auth.user", object_id=known or "",
            after={"username": username, "ip": client_ip(request) if request is not None else None,
                   "failures": failures, "locked_out": locked})


def _locked_out(sender, request, username, ip_address, **kwargs):
    suppressed = _first_in_window(f"lockout:{username}:{ip_address}", LOCKOUT_WINDOW_S)
    if suppressed is None:
        return
    known = User._default_manager.filter(username=username).values_list("pk", flat=True).first()
    _record("auth.lockout", actor=None, object_type="auth.user", object_id=known or "",
            after={"username": username, "ip": ip_address, "failures": getattr(request, "axes_failures_since_start",
                                                                                 None),
                   "cooloff_minutes": cooloff_minutes(), "suppressed_before": suppressed})


def _refused(sender, request, response, **kwargs):
    user = getattr(request, "user", None)
    actor = user if user is not None and user.is_authenticated else None
    who = f"user:{actor.pk}" if actor else f"ip:{client_ip(request)}"
    suppressed = _first_in_window(f"refused:{who}:{request.path}", REFUSAL_WINDOW_S)
    if suppressed is None:
        return
    after = {"path": request.path, "method": request.method, "status": response.status_code,
             "roles": sorted(r.value for r in user_roles(actor)) if actor else [],
             "ip": client_ip(request), "suppressed_before": suppressed}
    try:
        _record("auth.refused", actor=actor, target=actor, after=after)
    except Exception:   # a refusal stays a 403 even when its audit row cannot be written
        log.exception("auth.refused not recorded for %s", request.path)


def connect() -> None:
    """Called once from AuditConfig.ready()."""
    uid = "audit.auth_events."
    pre_save.connect(_user_pre_save, sender=User, dispatch_uid=uid + "user_pre_save")
    post_save.connect(_user_post_save, sender=User, dispatch_uid=uid + "user_post_save")
    pre_delete.connect(_user_pre_delete, sender=User, dispatch_uid=uid + "user_pre_delete")
    post_delete.connect(_user_post_delete, sender=User, dispatch_uid=uid + "user_post_delete")
    pre_save.connect(_group_pre_save, sender=Group, dispatch_uid=uid + "group_pre_save")
    post_save.connect(_group_post_save, sender=Group, dispatch_uid=uid + "group_post_save")
    pre_delete.connect(_group_pre_delete, sender=Group, dispatch_uid=uid + "group_pre_delete")
    post_delete.connect(_group_post_delete, sender=Group, dispatch_uid=uid + "group_post_delete")
    for through in RELATIONS:
        m2m_changed.connect(_m2m_changed, sender=through, dispatch_uid=uid + f"m2m_{through._meta.label_lower}")
    for model in (Token, TokenProxy):
        post_save.connect(_token_post_save, sender=model, dispatch_uid=uid + f"token_post_save_{model.__name__}")
        post_delete.connect(_token_post_delete, sender=model, dispatch_uid=uid + f"token_delete_{model.__name__}")
    user_logged_in.connect(_login, dispatch_uid=uid + "login")
    user_logged_out.connect(_logout, dispatch_uid=uid + "logout")
    user_login_failed.connect(_login_failed, dispatch_uid=uid + "login_failed")
    user_locked_out.connect(_locked_out, dispatch_uid=uid + "locked_out")
    request_refused.connect(_refused, dispatch_uid=uid + "refused")
