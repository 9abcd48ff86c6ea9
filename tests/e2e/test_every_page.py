"""Every page as every role, in Debian chromium (issue 18's targets for all pages).

For each page of the URLconf (tests/e2e/pages.py: a new route that is neither visited nor skipped with a
reason fails the first test) and each of the five roles, over a small but complete platform
(tests/e2e/world.py): a page may refuse a role (403, or 404 for an object outside the role's scope; the
table of answers is printed), but a page that answers 200 must have
- no console error and no uncaught exception,
- nothing in its visible text (`document.body.innerText`, every <details> opened) that looks like a Python
  repr, JSON, Django's default object name or a server path,
- no serious or critical accessibility violation by axe-core (tests/e2e/package.json pins it; scripts/test.sh
  installs it with `npm ci`), injected by Playwright.
The admin role also opens the Django admin's index and every model's list (console and text checks).
Every problem of every page and role is collected and asserted once, as a table (role, url, problem).

Screenshots of each role's main pages go to $MEDR2_SCREENSHOT_DIR (default /tmp/medr2-screenshots, full
page, PNG); with MEDR2_USER_GUIDE_SHOTS=docs/img the user guide's pictures (docs/user-guide.md: viewport
1280×800, JPEG, each under 250 KB) are written there too:

    MEDR2_USER_GUIDE_SHOTS=docs/img ./scripts/test.sh tests/e2e/test_every_page.py
"""
from __future__ import annotations

import hashlib
import os
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from accounts.roles import Role

from ..workers.conftest import tiny_vlm_dir  # noqa: F401  (fixture: the fine-tuning page's base model)
from .pages import SKIPPED, VISITS, coverage_problems, html_routes, server_paths, text_problems, visit_urls
from .test_pages_in_chromium import SCREENSHOTS, _login, browser  # noqa: F401  (fixture)
from .world import build_world, make_users

AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
VIEWPORT = {"width": 1280, "height": 800}
GUIDE_MAX_BYTES = 250_000
# the pictures of each role's main pages (labels of tests/e2e/pages.py's VISITS; "admin-index" is /admin/),
# in the order docs/user-guide.md shows them
SHOTS = {
    Role.ANNOTATOR: ["start", "worklist", "batch", "image"],
    Role.ADJUDICATOR: ["start", "queue", "case", "agreement"],
    Role.CURATOR: ["start", "chain-to-review", "item", "run", "run-new"],
    Role.AUDITOR: ["start", "report-version", "release", "audit"],
    Role.ADMIN: ["start", "admin-index", "finetune-job-done", "shortcut-audit"],
}
AXE_RUN = """async () => {
  const r = await axe.run(document, {resultTypes: ['violations']});
  return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => ({
    id: v.id, impact: v.impact, help: v.help, n: v.nodes.length,
    targets: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
}"""
# the visible text with every <details> opened, and the same without the forms' text (tests/e2e/pages.py)
VISIBLE_TEXT = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const text = document.body ? document.body.innerText : '';
  let outside = text;
  document.querySelectorAll('form').forEach(f => { const t = f.innerText; if (t) outside = outside.replace(t, ' '); });
  return {text, outside};
}"""


def test_every_html_route_is_visited_or_skipped_with_a_reason():
    routes = html_routes()
    assert len(routes) > 40, [r.name for r in routes]
    assert all(reason.strip() for reason in SKIPPED.values())
    labels = [v.label for v in VISITS]
    assert all(labels) and len(labels) == len(set(labels)), "each visit has its own label (screenshots, bench)"
    shown = {label for names in SHOTS.values() for label in names} - {"admin-index"}
    assert shown <= set(labels), shown - set(labels)
    problems = coverage_problems(routes)
    assert not problems, "\n".join(problems)


def test_a_route_added_to_the_urlconf_is_reported_until_it_is_listed():
    from .pages import Route

    problems = coverage_problems([*html_routes(), Route("annotation:brand-new", "brand-new/", "BrandNewView")])
    assert ("annotation:brand-new (brand-new/, BrandNewView) is neither visited (VISITS) nor skipped with a reason "
            "(SKIPPED)") in problems


def test_the_text_rules_catch_reprs_and_paths_and_spare_plain_words():
    paths = ["/tmp/", "/srv/medr2/storage/"]
    bad = {"De-identification: {'method': 'basic'}": "dict", "Gold: ['cyst in the liver']": "list",
           "Filters: {\"status\": [\"approved\"]}": "JSON", "Max tokens None": "None", "Greedy: True": "True",
           "Item: QAItem object (1)": "Django", "weights in /tmp/pytest-1/model": "/tmp/",
           "stored under /srv/medr2/storage/ab/cd.png": "/srv/medr2/storage/"}
    for text, what in bad.items():
        found = text_problems(text, paths)
        assert len(found) >= 1 and any(what in p for p in found), (text, found)
    for text in ("None of the options fits", "No cases yet", "False positives 3 · True negatives 7",
                 "see /images/12/ and runs/3/", "Rejected items: none", "Kind: False premise (harmful)",
                 "Cue follower S4 Benign vs malignant False premise B B"):
        assert text_problems(text, paths) == [], text
    form_help = 'Parameters\nJSON, e.g. {"path": "models/tiny"}'
    assert text_problems(form_help, paths, outside_forms="Parameters") == []
    assert text_problems(form_help, paths) != []


@pytest.mark.browser
@pytest.mark.timeout(1800)
@pytest.mark.django_db(transaction=True)
def test_every_page_as_every_role(browser, live_server, make_user, monkeypatch, settings, tmp_path,  # noqa: F811
                                  tiny_vlm_dir):  # noqa: F811
    assert AXE.is_file(), f"{AXE} is missing: npm ci --prefix tests/e2e (scripts/test.sh does it)"
    settings.MEDR2_RELEASE_ROOT = tmp_path / "releases"
    settings.MEDR2_FINETUNE_ROOT = tmp_path / "finetune"
    users = make_users(make_user)
    world = build_world(users=users, monkeypatch=monkeypatch, settings=settings, base_model_dir=tiny_vlm_dir)
    print("the platform built in " + ", ".join(f"{k} {v:.1f} s" for k, v in world.took.items()))
    urls = visit_urls(world.ids)
    paths = server_paths(settings)
    guide = Path(os.environ["MEDR2_USER_GUIDE_SHOTS"]) if os.environ.get("MEDR2_USER_GUIDE_SHOTS") else None
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    if guide:
        guide.mkdir(parents=True, exist_ok=True)

    problems: list[tuple[str, str, str]] = []
    answers: dict[tuple[str, str], int] = {}
    took: list[tuple[float, str, str]] = []        # (seconds, role, url): the slowest are printed
    axe_cache: dict[str, list] = {}                 # the same <main> seen by another role: the same violations
    for role in Role:
        context = browser.new_context(viewport=VIEWPORT, bypass_csp=True)
        page = context.new_page()
        seen = Seen(page, axe_cache)
        if role == Role.ANNOTATOR:       # before signing in: the login page as everybody first sees it
            check(page, seen, f"{live_server.url}/login/", "anonymous", problems, paths, axe=True)
        _login(page, live_server.url, users[role].username)
        checked_error_pages = set()
        for visit, url in urls:
            started = time.perf_counter()
            status = check(page, seen, live_server.url + url, role.value, problems, paths, axe=True,
                           checked_error_pages=checked_error_pages)
            took.append((time.perf_counter() - started, role.value, url))
            answers[(role.value, url)] = status
            if role == Role.ADMIN and status != 200:
                problems.append((role.value, url, f"answered {status} to the admin, who may see every page: the "
                                                  "page is broken or tests/e2e/pages.py builds a wrong URL"))
            if status == 200 and visit.label in SHOTS[role]:
                shoot(page, role, visit.label, guide, problems)
        if role == Role.ADMIN:
            _admin_pages(page, seen, live_server.url, problems, paths, guide)
        context.close()

    _print_answers(answers, took)
    assert not problems, f"{len(problems)} problem(s) on the pages:\n" + table(problems)


class Seen:
    """The console errors and uncaught exceptions of the page since the last `reset`; the axe results by
    the content of <main> (another role shown the same content gets the same violations, without a rerun;
    each role's header is checked on its first page, whose content is its own)."""

    def __init__(self, page, axe_cache: dict):
        self.axe_cache = axe_cache
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console error: {m.text} ({m.location.get('url', '')})")
                if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(f"uncaught exception: {exc}"))

    def reset(self) -> None:
        self.errors.clear()


def check(page, seen: Seen, url: str, who: str, problems: list, paths: list[str], *, axe: bool,
          checked_error_pages: set | None = None) -> int:
    """Load `url`; record its problems; return its status. A refusal (403/404) is checked once per role
    and status (the error page itself must be clean)."""
    seen.reset()
    response = page.goto(url, wait_until="load")
    page.wait_for_timeout(150)           # scripts that start on load (viewers, charts) have run
    status = response.status if response is not None else 0
    short = "/" + url.split("://", 1)[-1].split("/", 1)[-1]
    if status not in (200, 403, 404):
        problems.append((who, short, f"answered {status}"))
    if status != 200:
        if checked_error_pages is None or status in checked_error_pages or status not in (403, 404):
            return status
        checked_error_pages.add(status)
    errors = [e for e in seen.errors if not (status != 200 and "Failed to load resource" in e and f"{status}" in e)]
    problems.extend((who, short, e) for e in errors)
    visible = page.evaluate(VISIBLE_TEXT)
    problems.extend((who, short, p) for p in text_problems(visible["text"], paths, visible["outside"]))
    if axe:
        content = page.evaluate("() => (document.querySelector('main') || document.body).innerHTML")
        key = hashlib.sha256(content.encode()).hexdigest()
        if key not in seen.axe_cache:
            page.add_script_tag(path=str(AXE))
            seen.axe_cache[key] = page.evaluate(AXE_RUN)
        for v in seen.axe_cache[key]:
            problems.append((who, short, f"axe {v['impact']} {v['id']} ({v['help']}; {v['n']} element(s)): "
                                         + " | ".join(v["targets"])))
    return status


def shoot(page, role: Role, label: str, guide: Path | None, problems: list) -> None:
    """A full-page PNG into the screenshot folder; the user guide's viewport JPEG when asked."""
    name = f"{role.value}-{label}"
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    if guide is None:
        return
    target = guide / f"{name}.jpg"
    for quality in (70, 55, 40):
        page.screenshot(path=str(target), type="jpeg", quality=quality)
        if target.stat().st_size < GUIDE_MAX_BYTES:
            return
    problems.append((role.value, page.url, f"the user guide's picture {target} is {target.stat().st_size:,} bytes "
                                           f"even at JPEG quality 40 (limit {GUIDE_MAX_BYTES:,})"))


def _admin_pages(page, seen: Seen, base: str, problems: list, paths: list[str], guide: Path | None) -> None:
    """The Django admin's index and each registered model's list: no console error, nothing repr-like
    (model names such as 'Run batchs' or rows such as 'QAItem object (1)'). Django's own templates: no axe."""
    from django.contrib import admin

    status = check(page, seen, f"{base}/admin/", "admin", problems, paths, axe=False)
    if status == 200:
        shoot(page, Role.ADMIN, "admin-index", guide, problems)
    for model in sorted(admin.site._registry, key=lambda m: m._meta.label):
        url = f"{base}/admin/{model._meta.app_label}/{model._meta.model_name}/"
        status = check(page, seen, url, "admin", problems, paths, axe=False)
        if status in (403, 404):
            problems.append(("admin", url.removeprefix(base), f"the Django admin list answers {status} to the admin"))
        if BAD_PLURAL.search(str(model._meta.verbose_name_plural)):
            problems.append(("admin", url.removeprefix(base),
                             f"the admin names the model {str(model._meta.verbose_name_plural)!r}"))


# a plural Django made by adding an 's' to a word that takes 'es' or 'ies' ("Run batchs", "Sync log entrys")
BAD_PLURAL = re.compile(r"(?:ch|sh|x|z|s)s$|[^aeiou]ys$", re.IGNORECASE)


def table(rows: list[tuple[str, str, str]]) -> str:
    rows = sorted(set(rows), key=lambda r: (r[1], r[0], r[2]))
    w_role = max(len(r[0]) for r in rows)
    w_url = min(60, max(len(r[1]) for r in rows))
    lines = [f"{'role':{w_role}}  {'url':{w_url}}  problem", f"{'-' * w_role}  {'-' * w_url}  {'-' * 7}"]
    lines += [f"{role:{w_role}}  {url:{w_url}}  {what}" for role, url, what in rows]
    return "\n".join(lines)


def _print_answers(answers: dict[tuple[str, str], int], took: list[tuple[float, str, str]]) -> None:
    """Which role got what on which page (a refusal is expected; this is the record of them)."""
    roles = [r.value for r in Role]
    urls = list(dict.fromkeys(url for _, url in answers))
    lines = ["status by page and role:", f"{'url':58} " + " ".join(f"{r[:11]:>11}" for r in roles)]
    lines += [f"{url[:58]:58} " + " ".join(f"{answers.get((r, url), ''):>11}" for r in roles) for url in urls]
    counts = Counter(answers.values())
    lines.append("totals: " + ", ".join(f"{n} × {status}" for status, n in sorted(counts.items())))
    lines.append(f"{len(took)} visits in {sum(t for t, _, _ in took):.0f} s (with the checks); the slowest: "
                 + ", ".join(f"{url} as {role} {t:.1f} s" for t, role, url in sorted(took, reverse=True)[:8]))
    text = "\n".join(lines)
    print(text)
    (SCREENSHOTS / "every-page-status.txt").write_text(text + "\n")
