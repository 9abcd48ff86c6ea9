"""manage.py register_model NAME BACKEND — add a model (or baseline) to evaluate."""
from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from workers.backends import backend_names
from workers.selectors import endpoint_find
from workers.services.endpoints import endpoint_create, endpoint_update, prior_fit


class Command(BaseCommand):
    help = ("Register a model endpoint. Parameters are JSON, e.g. '{\"path\": \"var/models/tiny-vlm\"}' for "
            "transformers or '{\"base_url\": \"http://127.0.0.1:8001/v1\", \"model\": \"qwen\"}' for "
            "openai-compatible. An existing endpoint of that name is updated. The prior baseline is fitted on "
            "the train split.")

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("backend", help=f"one of: {', '.join(backend_names())}")
        parser.add_argument("--params", default="{}", help="backend parameters as a JSON object")
        parser.add_argument("--queue", choices=["gpu", "cpu"], default=None, help="default: the backend's")
        parser.add_argument("--display-name", default="")
        parser.add_argument("--prompt-template", default="{prompt}")
        parser.add_argument("--box-format", default="auto", choices=["auto", "pixel", "unit", "norm1000"])

    def handle(self, *args, name, backend, params, queue, display_name, prompt_template, box_format, **opts):
        try:
            parameters = json.loads(params)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--params is not valid JSON: {exc}") from exc
        try:
            existing = endpoint_find(name=name)
            if existing:
                if existing.backend != backend:
                    raise CommandError(f"{name} exists with backend {existing.backend}")
                changes = {"parameters": {**existing.parameters, **parameters}, "prompt_template": prompt_template,
                           "box_format": box_format}
                if queue:
                    changes["queue"] = queue
                if display_name:
                    changes["display_name"] = display_name
                endpoint = endpoint_update(endpoint=existing, actor=None, **changes)
                verb = "Updated"
            else:
                endpoint = endpoint_create(name=name, backend=backend, parameters=parameters, queue=queue,
                                           display_name=display_name, prompt_template=prompt_template,
                                           box_format=box_format, actor=None)
                verb = "Registered"
            if backend == "prior":
                endpoint = prior_fit(endpoint=endpoint, actor=None)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"{verb} {endpoint.name} ({endpoint.backend}, queue {endpoint.queue}).")
