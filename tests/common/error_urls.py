"""The project's routes plus one that fails, to see the 500 page as a user would (tests/common/test_error_pages.py)."""
from django.urls import path

from medr2.urls import urlpatterns as project_urlpatterns


def boom(request):
    raise RuntimeError("a bug in a view (/srv/medr2/secret/path.py)")


urlpatterns = [path("boom/", boom), *project_urlpatterns]
