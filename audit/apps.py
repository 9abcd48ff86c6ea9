from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit trail"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (subscribes to accounts' user_created)
