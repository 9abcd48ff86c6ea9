from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit trail"

    def ready(self) -> None:
        from . import auth_events, receivers  # noqa: F401  (receivers: accounts' user_created)

        auth_events.connect()   # users, groups, memberships, tokens wherever they change; sign-in; refusals
