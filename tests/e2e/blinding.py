"""Readers are blind: every page and every API response an annotator or an adjudicator can reach, walked
with the platform's real objects (tests/e2e/world.py), holds no model name, no run id or run name, and no
box another reader drew (issue 20, "Blinding").

- Pages: every visit of `pages.VISITS`, as each reader.
- APIs: every GET API route of the URLconf, visited with the world's objects (`API_VISITS`) or skipped with a
  reason (`API_SKIPPED`); a new API route that is neither is a problem, so none escapes the walk. List APIs
  are followed through every page (`next`).
- What counts as a leak: a model's name or display name, a run's name (word-bounded, case-insensitive); a
  run id (a JSON key `run`, `run_id`, `run_ids` with a value; `/runs/<id>` links or "Run <id>" text in HTML);
  a box (a JSON object or viewer config with x0, y0, x1, y1) equal to one the other reader drew in Label
  Studio (`annotation.selectors.boxes_visible_to`).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from urllib.parse import urlsplit

from django.test import Client
from django.urls import get_resolver, reverse

from accounts.roles import Role

from .pages import _walk, answers_get, visit_urls

READERS = (Role.ANNOTATOR, Role.ADJUDICATOR)

# API GET routes -> reverse() args from the world's ids (None: no argument)
API_VISITS: dict[str, Callable[[dict], list] | None] = {
    "annotation:api-image-list": None, "annotation:api-image-detail": lambda i: [i["image"]],
    "annotation:api-taxonomy": None, "annotation:api-item-list": None,
    "annotation:api-item-detail": lambda i: [i["item"]], "annotation:api-item-variants": lambda i: [i["item"]],
    "annotation:api-chain-list": None, "annotation:api-chain-detail": lambda i: [i["chain"]],
    "annotation:api-variant-list": None, "annotation:api-variant-detail": lambda i: [i["variant"]],
    "validity:api-shortcut-audits": None, "validity:api-shortcut-audit": lambda i: [i["shortcut_audit"]],
    "workers:api-model-list": None, "workers:api-run-list": None, "workers:api-run-preview": None,
    "workers:api-run-detail": lambda i: [i["run"]], "workers:api-run-results": lambda i: [i["run"]],
    "workers:api-run-predictions": lambda i: [i["run"]],
    "labelstudio:api-batch-list": None, "labelstudio:api-batch-detail": lambda i: [i["ls_batch"]],
    "labelstudio:api-batch-tasks": lambda i: [i["ls_batch"]],
    "labelstudio:api-batch-sync-log": lambda i: [i["ls_batch"]],
    "adjudication:api-case-list": None, "adjudication:api-case-detail": lambda i: [i["case"]],
    "releases:api-release-list": None, "releases:api-release-detail": lambda i: [i["release"]],
    "finetune:api-job-list": None, "finetune:api-job-detail": lambda i: [i["job"]], "finetune:api-compare": None,
    "reports:api-report-list": None, "reports:api-report-detail": lambda i: [i["report"]],
    "reports:api-version-detail": lambda i: [i["version"]],
    "audit:api-event-list": None, "audit:api-verify": None,
}
API_SKIPPED = {
    "annotation:api-variant-image": "a PNG (the image pages' checks cover what it shows)",
    "reports:api-version-file": "a report file (auditors and above only; the reports tests cover the roles)",
    "audit:api-event-export": "the audit export (auditors only; the audit tests cover the roles)",
    "labelstudio:api-webhook": "Label Studio's webhook (POST with the shared secret; GET says how to configure it)",
    "api-schema": "the schema names fields, not data",
    "api-docs": "the schema's viewer",
}
RUN_KEYS = frozenset({"run", "run_id", "run_ids"})
_HTML_RUN = re.compile(r"/runs/\d+|\bRun \d+\b")
_JSON_SCRIPT = re.compile(r'<script[^>]*type="application/json"[^>]*>(.*?)</script>', re.S)


def api_routes() -> list[str]:
    return [name for name, route, callback in _walk(get_resolver())
            if (route.startswith("api/") or name.split(":")[-1].startswith("api-")) and answers_get(callback)]


def coverage_problems() -> list[str]:
    names = set(api_routes())
    problems = [f"{n} is an API route neither walked (API_VISITS) nor skipped with a reason (API_SKIPPED)"
                for n in sorted(names - set(API_VISITS) - set(API_SKIPPED))]
    problems += [f"API_VISITS/API_SKIPPED name {n}, which is no GET API route"
                 for n in sorted((set(API_VISITS) | set(API_SKIPPED)) - names)]
    return problems


def _boxes(value, out: list) -> list:
    if isinstance(value, dict):
        if all(k in value for k in ("x0", "y0", "x1", "y1")):
            try:
                out.append(tuple(round(float(value[k]), 1) for k in ("x0", "y0", "x1", "y1")))
            except (TypeError, ValueError):
                pass
        for v in value.values():
            _boxes(v, out)
    elif isinstance(value, list):
        for v in value:
            _boxes(v, out)
    return out


def _run_ids(value, path: str = "") -> list[str]:
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k in RUN_KEYS and v not in (None, [], ""):
                found.append(f"{path}.{k} = {v!r}")
            found += _run_ids(v, f"{path}.{k}")
    elif isinstance(value, list):
        for n, v in enumerate(value):
            found += _run_ids(v, f"{path}[{n}]")
    return found


def leaks(body: str, *, is_json: bool, names: list[re.Pattern], other_boxes: set[tuple]) -> list[str]:
    """What this response shows a reader that it must not (module docstring)."""
    out = [f"names {p.pattern!r}" for p in names if p.search(body)]
    docs = []
    if is_json:
        docs.append(json.loads(body))
        out += [f"a run id: {r}" for r in _run_ids(docs[0])][:3]
    else:
        out += [f"a run id: {m.group(0)!r}" for m in _HTML_RUN.finditer(body)][:3]
        for block in _JSON_SCRIPT.findall(body):
            try:
                docs.append(json.loads(block))
            except ValueError:
                continue
    shown = {b for d in docs for b in _boxes(d, [])}
    out += [f"another reader's box {b}" for b in sorted(shown & other_boxes)]
    return out


def _name_patterns(values) -> list[re.Pattern]:
    return [re.compile(r"(?<![\w-])" + re.escape(v) + r"(?![\w-])", re.I) for v in sorted(set(values)) if v]


def reader_leaks(*, world, users: dict) -> list[tuple[str, str, str]]:
    """(role, url, problem) for every leak; the world's objects must exist (tests/e2e/world.py)."""
    from annotation.models import GroundingBox, Variant
    from workers.models import EvaluationRun, ModelEndpoint

    ids = dict(world.ids)
    ids.setdefault("variant", Variant.objects.filter(item_id=ids["item"]).order_by("pk").values_list(
        "pk", flat=True).first())
    names = _name_patterns([*ModelEndpoint.objects.values_list("name", flat=True),
                            *ModelEndpoint.objects.values_list("display_name", flat=True),
                            *EvaluationRun.objects.values_list("name", flat=True)])
    drawn: dict[int, set] = {}
    # a reader's read: a box drawn in Label Studio (gold drawn by curators is the reference standard)
    for author, *xyxy in GroundingBox.objects.filter(author__isnull=False).exclude(ls_annotation_id="").values_list(
            "author_id", "x0", "y0", "x1", "y1"):
        drawn.setdefault(author, set()).add(tuple(round(float(v), 1) for v in xyxy))
    assert len(drawn) >= 2, "the world must hold boxes of two readers (tests/e2e/world.py, _annotation)"

    urls = [url for _, url in visit_urls(ids)]
    urls += [reverse(name, args=args(ids) if args else None) for name, args in API_VISITS.items()]
    problems = [("-", "-", p) for p in coverage_problems()]
    for role in READERS:
        user = users[role]
        others = {b for author, boxes in drawn.items() if author != user.pk for b in boxes}
        client = Client()
        client.force_login(user)
        queue, seen = list(urls), set()
        while queue:
            url = queue.pop(0)
            if url in seen:
                continue
            seen.add(url)
            response = client.get(url)
            if response.status_code != 200 or response.streaming:
                continue
            kind = response.get("Content-Type", "")
            if not kind.startswith(("application/json", "text/html")):
                continue
            body = response.content.decode()
            is_json = kind.startswith("application/json")
            problems += [(role.value, url, p) for p in leaks(body, is_json=is_json, names=names, other_boxes=others)]
            if is_json and isinstance(doc := json.loads(body), dict) and doc.get("next"):
                nxt = urlsplit(doc["next"])
                queue.append(f"{nxt.path}?{nxt.query}")
    return problems
