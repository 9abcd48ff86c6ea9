from django.apps import AppConfig

from audit.links import register_object_link


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Benchmark content"

    def ready(self) -> None:
        # audit events link to these pages (audit/links.py)
        register_object_link("annotation.image", "annotation:image-detail")
        register_object_link("annotation.qaitem", "annotation:item-detail")
        register_object_link("annotation.chain", "annotation:chain-detail")
        register_object_link("annotation.importbatch", "annotation:import-batch")
