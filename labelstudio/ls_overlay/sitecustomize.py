"""Loaded by Label Studio's Python only (labelstudio/server.py puts this folder on its PYTHONPATH): once
Label Studio's Django apps are ready, install the Med-R2 organization guard (medr2_ls_guard)."""


def _hook() -> None:
    try:
        from django.apps import registry
    except ImportError:        # not Label Studio's virtualenv
        return
    populate = registry.Apps.populate

    def populate_then_guard(self, installed_apps=None):
        populate(self, installed_apps)
        if self is registry.apps and self.ready and not getattr(registry, "medr2_guarded", False):
            registry.medr2_guarded = True
            import medr2_ls_guard

            medr2_ls_guard.install()

    registry.Apps.populate = populate_then_guard


_hook()
