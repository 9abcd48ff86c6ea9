from django.apps import AppConfig


class ValidityConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "validity"
    verbose_name = "Benchmark validity (shortcut audit)"
