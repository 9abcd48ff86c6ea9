"""Browser protections (docs/security.md, "Browser protections"): `Cache-Control: no-store` on everything the
application serves (medical images and pixels included; static files keep their cache), a Content-Security-Policy
that allows scripts from our own files only (no inline script or handler in any template; the API docs page
works under it), short idle sessions, and `manage.py check --deploy` clean with the production environment of
docs/deploy.md."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client, override_settings
from django.urls import reverse

from accounts.roles import Role
from tests.conftest import png_bytes

ROOT = Path(__file__).resolve().parent.parent
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"""<[^>]+\son[a-z]+\s*=\s*["']""", re.I)
# what docs/deploy.md ("Checking a deployment") documents as the production environment
PRODUCTION_ENV = {
    "SECRET_KEY": "k7Qz-" + "x" * 20 + "-9fLmN2pR8sT4vW6yB1cD3eG5hJ7kM0nP",
    "MEDR2_DEID_SALT": "deid-salt-for-the-check",
    "MEDR2_DEBUG": "false",
    "MEDR2_TLS_PROXY": "true",
    "MEDR2_SECURE_COOKIES": "true",
    "ALLOWED_HOSTS": "studio.example.org,web",
    "CSRF_TRUSTED_ORIGINS": "https://studio.example.org",
}


def _client(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.django_db
def test_every_application_response_is_no_store(users):
    from annotation.services.images import BytesSource, images_import

    curator = users[Role.CURATOR]
    image = images_import(sources=[BytesSource("x.png", png_bytes())], actor=curator).images.get()
    client = _client(curator)
    for url in (reverse("dashboard:index"), reverse("annotation:image-detail", args=[image.pk]),
                reverse("annotation:image-file", args=[image.pk]), reverse("annotation:image-pixels", args=[image.pk]),
                reverse("annotation:api-image-list"), reverse("admin:index") + "x/", reverse("audit:event-list")):
        response = client.get(url)
        assert response["Cache-Control"] == "no-store", (url, response.status_code)
    assert _client().get(reverse("accounts:login"))["Cache-Control"] == "no-store"


@override_settings(WHITENOISE_USE_FINDERS=True, WHITENOISE_AUTOREFRESH=True)
def test_static_files_keep_their_cache():
    response = Client().get(django_settings.STATIC_URL + "js/page_controls.js")
    assert response.status_code == 200
    assert "no-store" not in response.get("Cache-Control", "")
    assert "Content-Security-Policy" not in response


@pytest.mark.django_db
def test_pages_send_a_policy_without_inline_scripts(users):
    client = _client(users[Role.ADMIN])
    for url in (reverse("dashboard:index"), reverse("admin:index"), reverse("accounts:login")):
        policy = client.get(url)["Content-Security-Policy"]
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
        assert directives["script-src"] == "'self'", url
        assert directives["default-src"] == "'self'" and directives["object-src"] == "'none'"
        assert directives["frame-ancestors"] == "'none'"


def test_no_template_has_an_inline_script_or_handler():
    found = []
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text()
        for pattern in (INLINE_SCRIPT, INLINE_HANDLER, re.compile(r"javascript:", re.I)):
            found += [f"{path.relative_to(ROOT)}: {m.group(0)[:80]}" for m in pattern.finditer(text)]
    assert not found, "move these into static/js (docs/security.md):\n" + "\n".join(found)


def test_the_inline_checks_catch_what_they_should():
    assert INLINE_SCRIPT.search("<script>alert(1)</script>")
    assert not INLINE_SCRIPT.search('<script src="/static/js/x.js" defer></script>')
    assert not INLINE_SCRIPT.search('<script id="cfg" type="application/json">{}</script>')
    assert INLINE_HANDLER.search('<input type="checkbox" onclick="go()">')
    assert not INLINE_HANDLER.search('<input data-check-all="input[name=ids]">')


@pytest.mark.django_db
def test_the_api_docs_page_runs_from_files(users):
    client = _client(users[Role.ANNOTATOR])
    page = client.get(reverse("api-docs"))
    assert page.status_code == 200
    html = page.content.decode()
    assert not INLINE_SCRIPT.search(html)
    script_url = re.search(r'<script src="([^"]*script[^"]*)"', html).group(1).replace("&amp;", "&")
    script = client.get(script_url)
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert b"SwaggerUIBundle" in script.content


@pytest.mark.django_db
def test_sessions_end_after_thirty_idle_minutes_and_each_request_renews(users):
    assert django_settings.SESSION_COOKIE_AGE == 30 * 60 and django_settings.SESSION_SAVE_EVERY_REQUEST
    client = _client(users[Role.CURATOR])
    response = client.get(reverse("dashboard:index"))
    cookie = response.cookies[django_settings.SESSION_COOKIE_NAME]
    assert int(cookie["max-age"]) == 30 * 60 and cookie["httponly"]


def test_check_deploy_is_clean_with_the_documented_production_environment():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEDR2_", "ALLOWED_HOSTS", "CSRF_", "DJANGO_ALLOW_ASYNC_UNSAFE"))}   # tests set it
    env.update(PRODUCTION_ENV)
    env["SECRET_KEY"] = "q" + PRODUCTION_ENV["SECRET_KEY"]
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "ERROR"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    remaining = set(re.findall(r"\(([\w.]+\.[EW]\d+)\)", result.stdout + result.stderr))
    deploy_doc = (ROOT / "docs" / "deploy.md").read_text()
    undocumented = sorted(w for w in remaining if w not in deploy_doc)
    assert not undocumented, f"explain these in docs/deploy.md or fix them: {undocumented}"
    for name in PRODUCTION_ENV:
        assert name in deploy_doc
