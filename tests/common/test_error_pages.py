"""The 403, 404 and 500 pages with DEBUG off, as the demo and production run: the platform's own pages
(what happened, a way home, for 403 the role that is missing), never Django's debug page listing the URLs;
the 500 page needs neither the request nor the database."""
from __future__ import annotations

import pytest
from django.test import Client, RequestFactory

from accounts.roles import Role

pytestmark = pytest.mark.django_db

DEBUG_PAGE_MARKS = ("Using the URLconf", "Django tried these URL patterns", "Traceback", "DEBUG = True",
                    "technical_500", "Request Method:")


@pytest.fixture(autouse=True)
def debug_off(settings):
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["testserver"]


def _client(user=None) -> Client:
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.parametrize("role", [None, Role.CURATOR])
def test_a_missing_page_shows_the_platforms_404_page_not_the_url_list(users, role):
    client = _client(users[role] if role else None)
    response = client.get("/no-such-page/at-all/")
    html = response.content.decode()
    assert response.status_code == 404
    assert 'id="error-404"' in html and "There is nothing here" in html and "/no-such-page/at-all/" in html
    assert 'href="/"' in html or 'href="/dashboard' in html or "Go to the dashboard" in html
    assert not any(mark in html for mark in DEBUG_PAGE_MARKS)
    assert "admin/" not in html.split('id="error-404"')[1]          # no list of routes


def test_an_object_you_may_not_see_is_a_plain_404(users):
    response = _client(users[Role.CURATOR]).get("/images/999999/")
    assert response.status_code == 404 and 'id="error-404"' in response.content.decode()


def test_a_refusal_names_the_role_that_is_missing_and_the_users_own_roles(users):
    response = _client(users[Role.ANNOTATOR]).get("/audit/")
    html = response.content.decode()
    assert response.status_code == 403 and 'id="error-403"' in html
    assert "This page needs the auditor role" in html
    assert "annotator" in html and "Go to the dashboard" in html
    assert not any(mark in html for mark in DEBUG_PAGE_MARKS)


def test_a_server_error_shows_the_500_page_without_the_traceback_or_the_path(settings, users):
    settings.ROOT_URLCONF = "tests.common.error_urls"
    response = _client(users[Role.CURATOR]).get("/boom/")
    html = response.content.decode()
    assert response.status_code == 500 and 'id="error-500"' in html and "Something went wrong" in html
    assert "/srv/medr2" not in html and "RuntimeError" not in html
    assert not any(mark in html for mark in DEBUG_PAGE_MARKS)


def test_the_500_page_needs_neither_the_request_context_nor_the_database(django_assert_num_queries):
    from django.views.defaults import server_error

    request = RequestFactory().get("/anything/")            # no session, no user: the middleware never ran
    with django_assert_num_queries(0):
        response = server_error(request)
    html = response.content.decode()
    assert response.status_code == 500 and 'id="error-500"' in html and "medr2.css" in html
