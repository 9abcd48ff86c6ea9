import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medr2.settings")
application = get_wsgi_application()

# What start-up loads (every app, the URLconf and so every view module) lives as long as the process: keep
# it out of the garbage collector's full passes, each of which walks every tracked object (300-400 ms pauses
# once every few dozen requests at the paper's scale; docs/benchmarks.md).
from django.urls import get_resolver  # noqa: E402 - after the application is set up

get_resolver().check()   # imports the URLconf and every view module
gc.collect()
gc.freeze()
