"""Every page of the platform, for the test that visits them all as every role (tests/e2e/test_every_page.py)
and for the page-latency benchmark (bench/ui_latency.py).

- `html_routes()` reads the project's URLconf: every GET route that is not an API or the Django admin. A
  route is either visited (`VISITS`: the URLs that show it with real objects) or skipped with a reason
  (`SKIPPED`: it answers a file or JSON, not a page); a new route that is neither fails
  `test_every_html_route_is_visited_or_skipped_with_a_reason`.
- `visit_urls(ids)` turns `VISITS` into URLs, given the ids of the objects to show (`IDS`).
- `text_problems(text, server_paths)` lists what a page's visible text must never show: Python reprs, JSON,
  Django's default object names, server paths.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver, reverse

# the objects a page shows, as `visit_urls` expects them (tests/e2e/world.py and bench/ui_latency.py fill them)
IDS = ("image", "series_image", "import_batch", "item", "chain", "pending_chain", "category", "run", "case",
       "resolved_case", "ls_batch", "ls_task", "shortcut_audit", "release", "job", "done_job", "report", "version")


@dataclass(frozen=True)
class Route:
    name: str            # "<namespace>:<url name>"
    route: str           # the pattern, e.g. "images/<int:pk>/"
    view: str            # the view's class or function name


@dataclass(frozen=True)
class Visit:
    name: str                                       # the route's name
    args: Callable[[dict], list] = lambda ids: []   # ids -> reverse() args
    query: str = ""
    label: str = ""                                 # a short name for the tables and screenshots


def _walk(resolver, prefix: str = "", namespace: str = "") -> Iterator[tuple[str, str, object]]:
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            ns = ":".join(x for x in (namespace, p.namespace) if x)
            yield from _walk(p, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern) and p.name:
            yield ":".join(x for x in (namespace, p.name) if x), prefix + str(p.pattern), p.callback


def answers_get(callback) -> bool:
    view_class = getattr(callback, "view_class", None)
    if view_class is None:           # a function view: only its decorators say; the ones here say POST
        return "GET" in (getattr(callback, "allowed_methods", None) or ["GET"])
    return hasattr(view_class, "get") and "get" in view_class.http_method_names


def is_api_or_admin(name: str, route: str) -> bool:
    return route.startswith(("api/", "admin/")) or name.split(":")[-1].startswith("api-") or name.startswith("admin:")


def html_routes() -> list[Route]:
    """Every named GET route that is neither an API nor the Django admin (docs/user-guide.md has the admin)."""
    out = []
    for name, route, callback in _walk(get_resolver()):
        if is_api_or_admin(name, route) or not answers_get(callback):
            continue
        view = getattr(callback, "view_class", callback).__name__
        out.append(Route(name, route, view))
    return out


# GET routes that answer something other than a page; each is loaded by a page that is visited
SKIPPED = {
    "annotation:image-file": "the image's PNG, drawn by the image, item, chain and case pages",
    "annotation:image-pixels": "the stored pixel values the viewer windows (binary), read by the image pages",
    "adjudication:case-pixels": "the case image's stored pixel values the viewer windows (binary)",
    "annotation:variant-image": "a variant's PNG, drawn by the item page",
    "workers:run-progress": "JSON polled by the run page",
    "annotation:import-batch-progress": "JSON polled by the import batch page while it imports",
    "workers:run-export": "the results download (CSV / JSON)",
    "labelstudio:image": "the signed PNG link Label Studio loads",
    "adjudication:case-image": "the case's PNG, drawn by the case page",
    "adjudication:case-variant-image": "a variant's PNG, drawn by the case page",
    "releases:release-progress": "JSON polled by the release page",
    "releases:release-download": "the release archive (.tar.gz)",
    "finetune:job-progress": "JSON polled by the job page",
    "reports:version-progress": "JSON polled by the report version page",
    "reports:copy-file": "the signed copy's PDF",
    "audit:event-export": "the trail's export (CSV / JSONL)",
}

VISITS = [
    Visit("accounts:login", label="login"),
    Visit("dashboard:index", label="start"),
    Visit("annotation:image-list", label="images"),
    Visit("annotation:image-list", query="modality=MR", label="images-mr"),
    Visit("annotation:image-detail", lambda o: [o["image"]], label="image"),
    Visit("annotation:image-detail", lambda o: [o["series_image"]], label="image-series"),
    Visit("annotation:image-assign", label="image-assign"),
    Visit("annotation:image-import", label="import"),
    Visit("annotation:import-batch", lambda o: [o["import_batch"]], label="import-batch"),
    Visit("annotation:item-list", label="items"),
    Visit("annotation:item-list", query="status=draft", label="items-draft"),
    Visit("annotation:item-detail", lambda o: [o["item"]], label="item"),
    Visit("annotation:item-edit", lambda o: [o["item"]], label="item-edit"),
    Visit("annotation:chain-detail", lambda o: [o["chain"]], label="chain"),
    Visit("annotation:chain-detail", lambda o: [o["pending_chain"]], label="chain-to-review"),
    Visit("annotation:category-list", label="taxonomy"),
    Visit("annotation:category-create", label="category-new"),
    Visit("annotation:category-edit", lambda o: [o["category"]], label="category-edit"),
    Visit("validity:shortcut-list", label="shortcut-audits"),
    Visit("validity:shortcut-detail", lambda o: [o["shortcut_audit"]], label="shortcut-audit"),
    Visit("workers:model-list", label="models"),
    Visit("workers:run-list", label="runs"),
    Visit("workers:run-create", label="run-new"),
    Visit("workers:run-detail", lambda o: [o["run"]], label="run"),
    Visit("workers:run-predictions", lambda o: [o["run"]], label="predictions"),
    Visit("workers:run-predictions", lambda o: [o["run"]], query="correct=false", label="predictions-wrong"),
    Visit("labelstudio:worklist", label="worklist"),
    Visit("labelstudio:batch-create", label="batch-new"),
    Visit("labelstudio:batch-detail", lambda o: [o["ls_batch"]], label="batch"),
    Visit("labelstudio:task-detail", lambda o: [o["ls_batch"], o["ls_task"]], label="task"),
    Visit("adjudication:queue", label="queue"),
    Visit("adjudication:queue", query="status=all", label="queue-all"),
    Visit("adjudication:next", label="next-case"),
    Visit("adjudication:agreement", label="agreement"),
    Visit("adjudication:case-detail", lambda o: [o["case"]], label="case"),
    Visit("adjudication:case-detail", lambda o: [o["resolved_case"]], label="case-resolved"),
    Visit("releases:release-list", label="releases"),
    Visit("releases:release-create", label="release-new"),
    Visit("releases:release-detail", lambda o: [o["release"]], label="release"),
    Visit("finetune:job-list", label="finetune-jobs"),
    Visit("finetune:job-create", label="finetune-new"),
    Visit("finetune:compare", query="run={run}", label="compare"),
    Visit("finetune:job-detail", lambda o: [o["job"]], label="finetune-job"),
    Visit("finetune:job-detail", lambda o: [o["done_job"]], label="finetune-job-done"),
    Visit("reports:report-list", label="reports"),
    Visit("reports:report-create", label="report-new"),
    Visit("reports:report-detail", lambda o: [o["report"]], label="report"),
    Visit("reports:version-detail", lambda o: [o["version"]], label="report-version"),
    Visit("reports:version-file", lambda o: [o["version"], "html"], label="report-document"),
    Visit("audit:event-list", label="audit"),
    Visit("audit:event-list", query="object_type=annotation.qaitem&object_id={item}", label="audit-item-history"),
    Visit("audit:verify", label="audit-verify"),
]


def visit_urls(ids: dict, visits: list[Visit] = VISITS) -> list[tuple[Visit, str]]:
    """(visit, path with query) for each visit, its objects taken from `ids`."""
    out = []
    for v in visits:
        url = reverse(v.name, args=v.args(ids))
        if v.query:
            url += "?" + v.query.format(**ids)
        out.append((v, url))
    return out


def coverage_problems(routes: list[Route] | None = None) -> list[str]:
    """Routes neither visited nor skipped, and visits or skips that name no route (stale entries)."""
    routes = html_routes() if routes is None else routes
    names = {r.name for r in routes}
    visited = {v.name for v in VISITS}
    problems = [f"{r.name} ({r.route}, {r.view}) is neither visited (VISITS) nor skipped with a reason (SKIPPED)"
                for r in routes if r.name not in visited and r.name not in SKIPPED]
    problems += [f"VISITS names {n}, which is not a GET page route" for n in sorted(visited - names)]
    problems += [f"SKIPPED names {n}, which is not a GET page route" for n in sorted(set(SKIPPED) - names)]
    problems += [f"{n} is both visited and skipped" for n in sorted(visited & set(SKIPPED))]
    return problems


# --- what a page's visible text must never show -------------------------------------------------------------
# a Python value as Django prints it: alone at the end of a line or table cell, or before a comma; English words
# such as "None of the above", "False premise" or "True positives" are left alone
_VALUE = r"(?:None|True|False)"
_PY_VALUE = re.compile(r"(?<![\w/.-])" + _VALUE + r"(?=[ \t]*(?:$|[\n\t,;)\]}·|]))", re.MULTILINE)
TEXT_RULES = [
    (re.compile(r"\{'|\['|'\]|'\}"), "a Python dict or list repr"),
    (_PY_VALUE, "a Python None/True/False shown as a value"),
    (re.compile(r"\b[A-Z]\w* object \(\d+\)"), "Django's default object name"),
    (re.compile(r"<[\w.]+ object at 0x|<QuerySet|OrderedDict\(|Decimal\(|datetime\.(?:datetime|date)\("),
     "a Python object repr"),
    (re.compile(r"Traceback \(most recent call last\)"), "a traceback"),
]
# JSON shown to a reader (a form asking for JSON may show its format: the rule skips the text of forms)
JSON_RULE = (re.compile(r'\{"|\["|"\]|"\}'), "a JSON blob")
SERVER_PATH_PREFIXES = ("/tmp/", "/work/", "/home/", "/var/", "/root/", "/srv/", "/usr/", "/opt/", "/private/")


def server_paths(settings) -> list[str]:
    """The fixed prefixes plus every storage root the settings name (they may lie anywhere)."""
    roots = {str(getattr(settings, name)) for name in dir(settings)
             if name.startswith("MEDR2_") and name.endswith("_ROOT") and getattr(settings, name)}
    roots |= {str(settings.BASE_DIR), str(getattr(settings, "VAR_DIR", settings.BASE_DIR))}
    return sorted(set(SERVER_PATH_PREFIXES) | {r.rstrip("/") + "/" for r in roots if r.startswith("/")})


def _context(text: str, start: int, end: int, width: int = 40) -> str:
    snippet = text[max(0, start - width):end + width].replace("\n", " ⏎ ")
    return " ".join(snippet.split())


def text_problems(text: str, paths: list[str], outside_forms: str | None = None) -> list[str]:
    """What the visible text shows that a person should never see, each with its context. `outside_forms`:
    the text without the page's forms, for the JSON rule (the whole text when not given)."""
    out = []
    for rule, what, where in [*((r, w, text) for r, w in TEXT_RULES),
                              (*JSON_RULE, text if outside_forms is None else outside_forms)]:
        for m in list(rule.finditer(where))[:3]:
            out.append(f"{what}: …{_context(where, m.start(), m.end())}…")
    for path in paths:
        at = text.find(path)
        if at >= 0:
            out.append(f"a server path ({path}): …{_context(text, at, at + len(path))}…")
    return out
