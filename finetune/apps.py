from django.apps import AppConfig

from audit.links import register_object_link


class FinetuneConfig(AppConfig):
    name = "finetune"
    verbose_name = "Fine-tuning"

    def ready(self) -> None:
        register_object_link("finetune.finetunejob", "finetune:job-detail")   # audit events link to the job page
