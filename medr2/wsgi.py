import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medr2.settings")
application = get_wsgi_application()

# What start-up loads lives as long as the process: kept out of the garbage collector's full passes.
from common.collector import freeze_startup  # noqa: E402 - after the application is set up

freeze_startup()
