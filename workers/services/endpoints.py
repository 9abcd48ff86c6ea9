"""Registering models to evaluate, and fitting the `prior` baseline on the train split."""
from __future__ import annotations

import re
from collections import Counter, defaultdict

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import QAItem
from annotation.splits import SPLITS, split_for_group
from audit.services import audit_record

from ..backends import backend_class, backend_names
from ..models import ModelEndpoint, Queue, template_hash

# parameter names that hold a secret (api_key, access_token, client_secret, ...); `*_env` names are fine
SECRET_PARAM = re.compile(r"(^|_)(api_?key|key|token|password|passwd|secret|bearer)$", re.IGNORECASE)


def _validate(*, backend: str, parameters: dict, prompt_template: str, queue: str, box_format: str) -> None:
    if backend not in backend_names():
        raise ValidationError(f"unknown backend {backend!r}; known: {', '.join(backend_names())}")
    if not isinstance(parameters, dict):
        raise ValidationError("parameters must be a JSON object")
    secrets = [k for k in parameters if SECRET_PARAM.search(k)]
    if secrets:
        raise ValidationError(f"parameters {secrets} look like secrets; "
                              "name an environment variable (api_key_env) instead")
    if "{prompt}" not in prompt_template:
        raise ValidationError("the prompt template must contain {prompt}")
    if queue not in Queue.values:
        raise ValidationError(f"queue must be one of {Queue.values}")
    if box_format not in ("auto", "pixel", "unit", "norm1000"):
        raise ValidationError("box_format must be auto, pixel, unit or norm1000")


def _snapshot(e: ModelEndpoint) -> dict:
    return {"name": e.name, "backend": e.backend, "parameters": e.parameters, "queue": e.queue,
            "prompt_template_hash": e.prompt_template_hash, "box_format": e.box_format, "is_active": e.is_active,
            **({"lineage": e.lineage} if e.lineage else {})}


def endpoint_create(*, name: str, backend: str, actor, parameters: dict | None = None, queue: str | None = None,
                    prompt_template: str = "{prompt}", display_name: str = "", description: str = "",
                    box_format: str = "auto", lineage: dict | None = None) -> ModelEndpoint:
    parameters = dict(parameters or {})
    if not queue:
        queue = backend_class(backend).default_queue if backend in backend_names() else "cpu"
    _validate(backend=backend, parameters=parameters, prompt_template=prompt_template, queue=queue,
              box_format=box_format)
    if ModelEndpoint.objects.filter(name=name).exists():
        raise ValidationError(f"a model named {name!r} already exists")
    with transaction.atomic():
        endpoint = ModelEndpoint.objects.create(
            name=name, backend=backend, parameters=parameters, queue=queue, prompt_template=prompt_template,
            prompt_template_hash=template_hash(prompt_template), display_name=display_name, description=description,
            box_format=box_format, lineage=dict(lineage or {}),
            created_by=actor if getattr(actor, "is_authenticated", False) else None)
        audit_record(actor=actor, action="workers.endpoint.create", target=endpoint, after=_snapshot(endpoint))
    return endpoint


def endpoint_update(*, endpoint: ModelEndpoint, actor, **changes) -> ModelEndpoint:
    allowed = {"parameters", "queue", "prompt_template", "display_name", "description", "box_format", "is_active"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError(f"cannot change {sorted(unknown)}")
    with transaction.atomic():
        endpoint = ModelEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        before = _snapshot(endpoint)
        original = {f: getattr(endpoint, f) for f in allowed}
        for field, value in changes.items():
            setattr(endpoint, field, value)
        _validate(backend=endpoint.backend, parameters=endpoint.parameters, prompt_template=endpoint.prompt_template,
                  queue=endpoint.queue, box_format=endpoint.box_format)
        endpoint.prompt_template_hash = template_hash(endpoint.prompt_template)
        unchanged = all(getattr(endpoint, f) == v for f, v in original.items())
        if unchanged:  # re-registering the same model (e.g. the demo run twice) writes nothing
            return endpoint
        endpoint.save()
        audit_record(actor=actor, action="workers.endpoint.update", target=endpoint, before=before,
                     after=_snapshot(endpoint))
    return endpoint


def prior_table(*, split: str = "train") -> dict:
    """Per category: the most frequent gold option text, its most frequent letter as stored, and
    the mean gold box (0-1 units), over current approved items whose image is in `split`."""
    rows = (QAItem.objects.filter(is_current=True, status=QAItem.Status.APPROVED)
            .values_list("category__code", "category__answer_type", "options", "gold_answer",
                         "chain__image__split_group", "chain__image__width", "chain__image__height"))
    texts: dict[str, Counter] = defaultdict(Counter)
    letters: dict[str, Counter] = defaultdict(Counter)
    boxes: dict[str, list] = defaultdict(list)
    n_items = 0
    for code, answer_type, options, gold, group, w, h in rows.iterator(chunk_size=5000):
        if split_for_group(group or "") != split:
            continue
        n_items += 1
        if answer_type == "box" and isinstance(gold, list) and len(gold) == 4:
            boxes[code].append((gold[0] / w, gold[1] / h, gold[2] / w, gold[3] / h))
        elif answer_type in ("single_choice", "yes_no") and gold in (options or []):
            texts[code][gold] += 1
            letters[code][chr(ord("A") + options.index(gold))] += 1
    table = {}
    for code in sorted(set(texts) | set(boxes)):
        box = None
        if boxes.get(code):
            n = len(boxes[code])
            box = [round(sum(b[i] for b in boxes[code]) / n, 6) for i in range(4)]
        # ties broken by text so the table is deterministic
        text = min(texts[code].items(), key=lambda kv: (-kv[1], kv[0]))[0] if texts.get(code) else None
        letter = min(letters[code].items(), key=lambda kv: (-kv[1], kv[0]))[0] if letters.get(code) else None
        table[code] = {"text": text, "letter": letter, "box": box}
    return {"split": split, "n_items": n_items, "table": table}


def prior_fit(*, endpoint: ModelEndpoint, actor, split: str = "train") -> ModelEndpoint:
    """Learn the `prior` baseline's answers from the train split and store them as its parameters."""
    if endpoint.backend != "prior":
        raise ValidationError(f"{endpoint.name} is not a prior baseline")
    if split not in SPLITS:
        raise ValidationError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    fitted = prior_table(split=split)
    # the fitted split travels with the table: runs refuse to score the prior on it (workers/services/runs.py)
    params = {**endpoint.parameters, "table": fitted["table"], "fitted_split": split}
    endpoint = endpoint_update(endpoint=endpoint, actor=actor, parameters=params,
                               description=f"most frequent gold per category, learned from {fitted['n_items']} "
                                           f"{split} items")
    return endpoint
