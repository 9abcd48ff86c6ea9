from django.apps import AppConfig

from audit.links import register_object_link
from common.titles import register_titles


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Benchmark content"

    def ready(self) -> None:
        # audit events link to these pages (audit/links.py)
        register_object_link("annotation.image", "annotation:image-detail")
        register_object_link("annotation.qaitem", "annotation:item-detail")
        register_object_link("annotation.chain", "annotation:chain-detail")
        register_object_link("annotation.importbatch", "annotation:import-batch")
        # pages name variant kinds, categories and stages, never their codes (common/titles.py)
        from . import selectors
        from .variants.titles import KIND_TITLES

        register_titles("variant_kind", KIND_TITLES)
        register_titles("category", selectors.category_titles)
        register_titles("stage", selectors.stage_titles)
