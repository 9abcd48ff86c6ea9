from django.apps import AppConfig

from audit.links import register_object_link


class ValidityConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "validity"
    verbose_name = "Benchmark validity (shortcut audit)"

    def ready(self) -> None:
        register_object_link("validity.shortcutaudit", "validity:shortcut-detail")   # audit events link here
