"""Every model registered in Django admin: a create, a change and a delete made there are audited
(`admin.<app>.<model>.<verb>`, by the admin, with before/after), or the model admin is read-only and refuses
all three. The walk takes each admin's own forms as a browser would post them, so a new model admin that
writes without auditing fails here."""
from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.db import IntegrityError
from django.forms import CheckboxInput, ModelChoiceField, MultiWidget, Select, SelectMultiple
from django.forms.models import model_to_dict
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from accounts.services import user_create
from audit.admin import AuditedModelAdmin, ReadOnlyModelAdmin
from audit.models import AuditEvent
from audit.services import audit_verify
from tests.test_admin_site import populated  # noqa: F401  (fixture: two and more rows of every model)

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "walk-Secret-4711-x"
# Admins whose add form cannot make a row: the add fails as a whole (none left: images refuse the add)
ADD_FAILS: set[str] = set()
_UNSET = object()


def _field_value(bf, value=_UNSET):
    widget = getattr(bf.field.widget, "widget", bf.field.widget)   # admin's related-object wrapper
    value = bf.value() if value is _UNSET else bf.field.prepare_value(value)
    if getattr(bf.field, "disabled", False):
        return {}
    if isinstance(widget, MultiWidget):
        parts = widget.decompress(value) if not isinstance(value, list) else value
        return {f"{bf.html_name}_{i}": sub.format_value(part) or ""
                for i, (sub, part) in enumerate(zip(widget.widgets, parts, strict=False))}
    if isinstance(widget, CheckboxInput):
        return {bf.html_name: "on"} if value else {}
    if isinstance(widget, SelectMultiple):
        return {bf.html_name: [str(v) for v in (value or [])]}
    if isinstance(widget, Select):
        formatted = widget.format_value(value)
        return {bf.html_name: formatted[0] if formatted else ""}
    formatted = widget.format_value(value)
    return {bf.html_name: "" if formatted is None else formatted}


def _page_data(response) -> dict:
    """What the admin page's forms (the model's form and its inlines) would post unchanged."""
    data = {}
    for bf in response.context["adminform"].form:
        data.update(_field_value(bf))
    for inline in response.context.get("inline_admin_formsets", []):
        formset = inline.formset
        for bf in formset.management_form:
            data.update(_field_value(bf))
        for form in formset.forms:
            for bf in form:
                data.update(_field_value(bf))
    return data


def _unique_fields(model) -> set[str]:
    meta = model._meta
    names = {f.name for f in meta.fields if f.unique and not f.primary_key}
    names |= {n for c in meta.constraints for n in getattr(c, "fields", ())}
    names |= {n for together in meta.unique_together for n in together}
    return names


def _made_unique(model, data: dict, fresh_user) -> dict:
    """The data of an existing row, changed just enough that a second row may exist beside it."""
    data = dict(data)
    for name in _unique_fields(model):
        field = model._meta.get_field(name)
        if name not in data or field.choices:
            continue
        if field.is_relation:
            if field.null:
                data[name] = ""
            elif field.related_model is Group.user_set.field.model:   # a token's user: one token per user
                data[name] = str(fresh_user.pk)
        elif field.get_internal_type() in ("IntegerField", "PositiveIntegerField", "PositiveSmallIntegerField",
                                           "BigIntegerField", "SmallIntegerField"):
            data[name] = str(int(data[name] or 0) + 1000)
        else:
            value = f"{data[name]}-walk"
            data[name] = value[-field.max_length:] if field.max_length else value
    return data


def _new_events(after_seq: int, action: str):
    return list(AuditEvent.objects.filter(seq__gt=after_seq, action=action).order_by("seq"))


def _head() -> int:
    last = AuditEvent.objects.order_by("-seq").first()
    return last.seq if last else 0


def _urls(model, pk=None):
    meta = model._meta
    base = f"admin:{meta.app_label}_{meta.model_name}"
    if pk is None:
        return reverse(f"{base}_add")
    return reverse(f"{base}_change", args=[pk]), reverse(f"{base}_delete", args=[pk])


def _errors(response) -> str:
    return str(response.context["adminform"].form.errors) if response.context and "adminform" in response.context \
        else ""


def _add_data(client, model, existing, fresh_user) -> dict:
    """The add page's forms filled with an existing row's values (made unique)."""
    change_url, _ = _urls(model, existing.pk)
    template = _page_data(client.get(change_url))
    values = model_to_dict(existing)
    add_page = client.get(_urls(model))
    data = {}
    for bf in add_page.context["adminform"].form:
        if bf.html_name in template:
            data[bf.html_name] = template[bf.html_name]
        elif bf.name in values:
            data.update(_field_value(bf, values[bf.name]))
        else:
            data.update(_field_value(bf))
        if bf.field.required and data.get(bf.html_name) in (None, "") and isinstance(bf.field, ModelChoiceField):
            data[bf.html_name] = str(bf.field.queryset.order_by("pk").first().pk)   # e.g. a batch made by no one
    for inline in add_page.context.get("inline_admin_formsets", []):
        for bf in inline.formset.management_form:
            data.update(_field_value(bf))
    data = _made_unique(model, data, fresh_user)
    if "password1" in data:
        data.update(password1=NEW_PASSWORD, password2=NEW_PASSWORD, usable_password="true")
    return data


def _walk_audited(client, model, model_admin, admin_user, fresh_user) -> list[str]:
    problems = []
    label = model._meta.label_lower
    request = type("R", (), {"user": admin_user})()
    existing = model._default_manager.order_by("pk").first()
    if model_admin.has_add_permission(request) and label in ADD_FAILS:
        # the admin offers an add form that cannot make a row: it fails whole, leaving no row and no event
        rows, head = model._default_manager.count(), _head()
        with pytest.raises(IntegrityError):
            client.post(_urls(model), _add_data(client, model, existing, fresh_user))
        if model._default_manager.count() != rows or _head() != head:
            problems.append(f"{label} add: a failed add left a row or an event")
        target = existing
    elif model_admin.has_add_permission(request):
        head = _head()
        response = client.post(_urls(model), _add_data(client, model, existing, fresh_user))
        created = _new_events(head, f"admin.{label}.create")
        if response.status_code != 302 or len(created) != 1:
            return [f"{label} create: {response.status_code}, {len(created)} events {_errors(response)}"]
        if created[0].actor != admin_user or not created[0].after:
            problems.append(f"{label} create: actor {created[0].actor_name}, after {created[0].after}")
        target = model_admin.get_object(request, created[0].object_id)   # admin ids (a token's: its user's)
    else:
        problems += _refused(client, model, existing, ops=("add",))
        target = existing

    change_url, delete_url = _urls(model, target.pk)
    if model_admin.has_change_permission(request, target):
        head = _head()
        response = client.post(change_url, _page_data(client.get(change_url)))
        changed = _new_events(head, f"admin.{label}.change")
        if response.status_code != 302 or len(changed) != 1 or changed[0].before is None:
            problems.append(f"{label} change: {response.status_code}, {len(changed)} events {_errors(response)}")
    else:
        problems += _refused(client, model, target, ops=("change",))

    if model_admin.has_delete_permission(request, target):
        head = _head()
        response = client.post(delete_url, {"post": "yes"})
        deleted = _new_events(head, f"admin.{label}.delete")
        still_there = model_admin.get_object(request, str(target.pk)) is not None
        if response.status_code == 200 and still_there and not deleted:
            pass    # rows that others point to (PROTECT): the admin lists them and deletes nothing
        elif response.status_code != 302 or len(deleted) != 1 or deleted[0].object_id != str(target.pk) \
                or still_there:
            problems.append(f"{label} delete: {response.status_code}, {len(deleted)} events")
    else:
        problems += _refused(client, model, target, ops=("delete",))
    return problems


def _refused(client, model, obj, ops=("add", "change", "delete")) -> list[str]:
    """What the admin may not do is refused (403), changes nothing and writes no event."""
    problems = []
    label = model._meta.label_lower
    if obj is None:                       # no row to try a change or delete on: the add is still refused
        ops = tuple(op for op in ops if op == "add")
    change_url, delete_url = _urls(model, obj.pk) if obj is not None else ("", "")
    head = _head()
    if "add" in ops:
        if (status := client.get(_urls(model)).status_code) != 403:
            problems.append(f"{label} add page: {status}")
        if (status := client.post(_urls(model), {}).status_code) != 403:
            problems.append(f"{label} add: {status}")
    if "change" in ops and (status := client.post(change_url, {}).status_code) != 403:
        problems.append(f"{label} change: {status}")
    if "delete" in ops:
        if (status := client.post(delete_url, {"post": "yes"}).status_code) != 403:
            problems.append(f"{label} delete: {status}")
        if not model._default_manager.filter(pk=obj.pk).exists():
            problems.append(f"{label}: deleted although refused")
    if AuditEvent.objects.filter(seq__gt=head, action__startswith="admin.").exists():
        problems.append(f"{label}: a refused edit wrote an event")
    return problems


def test_every_admin_model_audits_its_edits_or_refuses_them(populated):  # noqa: F811
    admin_user = populated[Role.ADMIN]
    client = Client()
    client.force_login(admin_user)
    problems, walked = [], []
    for model, model_admin in sorted(admin.site._registry.items(), key=lambda kv: kv[0]._meta.label):
        fresh_user = user_create(username=f"walk-{model._meta.model_name}", email="", password=None, roles=[],
                                 actor=None)
        request = type("R", (), {"user": admin_user})()
        writes = [model_admin.has_add_permission(request), model_admin.has_change_permission(request),
                  model_admin.has_delete_permission(request)]
        if not any(writes):
            assert isinstance(model_admin, ReadOnlyModelAdmin), model._meta.label
            problems += _refused(client, model, model._default_manager.order_by("pk").first())
        else:
            if not isinstance(model_admin, AuditedModelAdmin):
                problems.append(f"{model._meta.label}: writes through {type(model_admin).__name__}, not audited")
                continue
            problems += _walk_audited(client, model, model_admin, admin_user, fresh_user)
        walked.append(model._meta.label)
    assert not problems, "\n".join(problems)
    assert {"auth.Group", "authtoken.TokenProxy", "auth.User"} <= set(walked)
    assert audit_verify().ok


def test_role_groups_keep_their_names_in_admin(users):
    client = Client()
    client.force_login(users[Role.ADMIN])
    auditor = Group.objects.get(name="auditor")
    change_url, delete_url = _urls(Group, auditor.pk)
    client.post(change_url, {"name": "auditors-renamed", "permissions": []})
    assert Group.objects.filter(pk=auditor.pk, name="auditor").exists()
    assert client.post(delete_url, {"post": "yes"}).status_code == 403
    assert Group.objects.filter(pk=auditor.pk).exists()


def test_a_token_made_in_admin_is_audited_without_its_key(users):
    client = Client()
    client.force_login(users[Role.ADMIN])
    annotator = users[Role.ANNOTATOR]
    response = client.post(reverse("admin:authtoken_tokenproxy_add"), {"user": annotator.pk})
    assert response.status_code == 302
    event = AuditEvent.objects.get(action="admin.authtoken.tokenproxy.create")
    assert event.object_id == str(annotator.pk) and event.actor == users[Role.ADMIN]
    assert annotator.auth_token.key not in event.canonical
    assert not AuditEvent.objects.filter(action__startswith="authtoken.token.").exists()   # one event, not two
