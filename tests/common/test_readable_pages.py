"""Readable pages everywhere: the main pages, rendered with realistic data (phantom DICOMs through the real
import and de-identification, generated chains with every variant kind, a scored run of planted models and a
baseline, an adjudication case, a Label Studio batch, a shortcut audit, a draft release, a report), show no
Python repr, no JSON blob, no server path and no raw rule or variant code; numbers are rounded, counts agree
with their nouns, and the de-identification record, the rule evidence and the robustness heatmap read as
tables. (tests/e2e/ visits every page in Chromium; this test reads the HTML the server sends.)"""
from __future__ import annotations

import html as html_lib
import re
from html.parser import HTMLParser

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from adjudication.rules import RULES
from annotation.models import VariantKind

from ..adjudication.test_facts import scored  # noqa: F401  (fixture)
from ..adjudication.test_verdicts import consensus_case  # noqa: F401  (fixture)
from ..workers.conftest import eval_content, make_endpoint  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

SERVER_PATHS = ("/tmp/", "/work/", "/home/", "/var/", "/srv/", "/opt/")
REPRS = ("{'", "['", "', '", "{\"", "<QuerySet", "object at 0x", "datetime.datetime(", "Decimal(")
LONE_VALUES = {"None", "True", "False", "nan", "NaN", "[]", "{}"}
VALUE_REPR = re.compile(r"(?:[:=]\s*|\()(?:None|True|False)\b")
LONG_FLOAT = re.compile(r"\d\.\d{6,}")
ONE_PLURAL = re.compile(r"(?<![\d.,])1 (events|items|cases|predictions|variants|models|steps|pairs|tasks|patients"
                        r"|annotators|errors|attempts|chains|images|readers)\b")
CODES = sorted({*RULES, *(k for k in VariantKind.values if "_" in k)})


class _Text(HTMLParser):
    """The text a person reads: text nodes and title / aria-label / alt values, outside <script>, <style>,
    a <textarea>'s value and a form field's help text (an input that takes JSON says so, with an example)."""

    SKIPPED = ("script", "style", "textarea")

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self._skip: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self._skip or tag in self.SKIPPED or "form-help" in (attrs.get("class") or "").split():
            self._skip.append(tag)
            return
        for name in ("title", "aria-label", "alt", "placeholder"):
            if attrs.get(name):
                self.chunks.append(attrs[name])

    def handle_endtag(self, tag):
        if self._skip and self._skip[-1] == tag:
            self._skip.pop()

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.chunks.append(data.strip())


def _problems(url: str, page: str, *, record: bool = False) -> list[str]:
    """What would not read well on `page`. `record`: the audit trail, whose field diffs show each value
    exactly as it was hashed (JSON, every digit); its paths are still cut."""
    parser = _Text()
    parser.feed(page)
    text = "\n".join(parser.chunks)
    found = []
    for mark in REPRS if not record else ("{'", "['", "<QuerySet", "object at 0x"):
        if mark in text:
            found.append(f"a Python repr or JSON ({mark!r})")
    for chunk in parser.chunks if not record else ():
        if chunk in LONE_VALUES:
            found.append(f"a bare {chunk!r}")
    checks = [(VALUE_REPR, "a Python value"), (ONE_PLURAL, "a wrong plural")]
    if not record:
        checks.append((LONG_FLOAT, "an unrounded number"))
    for pattern, what in checks:
        found += [f"{what}: {m.group(0)!r}" for m in pattern.finditer(text)]
    for path in (*SERVER_PATHS, str(settings.MEDR2_STORAGE_ROOT)):
        if path in html_lib.unescape(page):
            found.append(f"a server path ({path})")
    found += [f"a raw code ({code})" for code in CODES if re.search(rf"\b{code}\b", text)]
    return [f"{url}: {f} … {_near(text, f)}" for f in dict.fromkeys(found)]


def _near(text: str, problem: str) -> str:
    quoted = re.search(r"'(.+?)'|\((.+?)\)", problem)
    needle = (quoted.group(1) or quoted.group(2)) if quoted else ""
    i = text.find(needle) if needle else -1
    return text[max(i - 60, 0):i + 60].replace("\n", " | ") if i >= 0 else ""


@pytest.fixture
def world(consensus_case, eval_content, make_endpoint, users, django_capture_on_commit_callbacks):  # noqa: F811
    """Every kind of row the main pages show, made through the services."""
    from django.utils import timezone

    from annotation.models import Image, ImportBatch
    from labelstudio.services.batches import batch_create
    from releases.services import release_create
    from reports.services.lifecycle import report_create
    from validity.services import shortcut_audit_run
    from workers.models import EvaluationRun
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    curator = users[Role.CURATOR]
    eval_content(images=3, seed=1)
    oracle = make_endpoint("oracle-vlm", "oracle", display_name="Oracle VLM")
    follower = make_endpoint("cue-follower", "cue_follower", parameters={"p": 0.5, "accuracy": 0.7, "seed": 1})
    baseline = make_endpoint("random-baseline", "random", parameters={"seed": 0})
    make_endpoint("local-vlm", "transformers", display_name="Local VLM",
                  parameters={"path": "/srv/models/qwen2-vl-2b", "adapter": "/home/ana/adapters/a1",
                              "max_new_tokens": 16, "temperature": None, "do_sample": False})
    run = run_create(name="every kind", endpoints=[oracle, follower, baseline], actor=curator, split="all",
                     batch_size=1000, start=False, item_filters={"status": ["approved"]})
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    image = Image.objects.filter(source_format="dicom").order_by("pk").first()
    batch = batch_create(name="Readers' batch", actor=curator, images=[image], readers=[users[Role.ANNOTATOR]],
                         maximum_annotations=2)
    audit = shortcut_audit_run(filters={"status": "approved"}, split="test", actor=curator)
    release = release_create(actor=curator, filters={"modality": image.modality}, title="Phantom benchmark")
    report = report_create(actor=curator, title="Board report", runs=[EvaluationRun.objects.get(pk=run.pk)],
                           scope="Phantoms only.")
    return {**consensus_case, "run2": EvaluationRun.objects.get(pk=run.pk), "image": image, "batch": batch,
            "task": batch.tasks.first(), "audit": audit, "release": release, "report": report,
            "import_batch": ImportBatch.objects.order_by("pk").first(), "curator": curator}


def test_the_main_pages_show_no_reprs_no_server_paths_and_no_raw_codes(world, users):
    case, item = world["case"], world["item"]
    curator_pages = [
        reverse("dashboard:index"), reverse("annotation:image-list"),
        reverse("annotation:image-detail", args=[world["image"].pk]),
        reverse("annotation:item-list"), reverse("annotation:item-detail", args=[item.pk]),
        reverse("annotation:chain-detail", args=[item.chain_id]), reverse("annotation:category-list"),
        reverse("annotation:image-import"), reverse("annotation:import-batch", args=[world["import_batch"].pk]),
        reverse("workers:model-list"), reverse("workers:run-list"),
        reverse("workers:run-detail", args=[world["run"].pk]), reverse("workers:run-detail", args=[world["run2"].pk]),
        reverse("workers:run-predictions", args=[world["run2"].pk]),
        reverse("adjudication:queue"), reverse("adjudication:case-detail", args=[case.pk]),
        reverse("adjudication:agreement"),
        reverse("labelstudio:batch-detail", args=[world["batch"].pk]),
        reverse("labelstudio:task-detail", args=[world["batch"].pk, world["task"].pk]),
        reverse("validity:shortcut-list"), reverse("validity:shortcut-detail", args=[world["audit"].pk]),
        reverse("releases:release-list"), reverse("releases:release-detail", args=[world["release"].pk]),
        reverse("reports:report-list"), reverse("reports:report-detail", args=[world["report"].pk]),
        reverse("finetune:job-list"),
    ]
    visits = [(Role.CURATOR, url) for url in curator_pages] + [
        (Role.ADJUDICATOR, reverse("adjudication:queue")),
        (Role.ADJUDICATOR, reverse("adjudication:case-detail", args=[case.pk])),
        (Role.AUDITOR, reverse("workers:run-detail", args=[world["run2"].pk])),
        (Role.AUDITOR, reverse("audit:event-list")), (Role.AUDITOR, reverse("audit:verify")),
    ]
    problems, clients = [], {}
    for role, url in visits:
        client = clients.setdefault(role, Client())
        client.force_login(users[role])
        response = client.get(url)
        assert response.status_code == 200, (role, url, response.status_code)
        problems += _problems(f"{role.value} {url}", response.content.decode(),
                              record=url == reverse("audit:event-list"))
    assert not problems, "unreadable text on the pages:\n" + "\n".join(problems)


def test_records_evidence_and_results_read_as_tables_with_names(world, users):
    from common.palette import model_colour

    client = Client()
    client.force_login(users[Role.CURATOR])
    # the de-identification record: a table of what was done, never the dict
    image_page = client.get(reverse("annotation:image-detail", args=[world["image"].pk])).content.decode()
    assert 'class="kv-table deid"' in image_page
    for label in ("Profile", "Attributes removed", "UIDs replaced (consistently across the series)",
                  "File preamble cleared"):
        assert f">{label}</th>" in image_page, label
    # model parameters: a table, paths cut to their last part
    models_page = client.get(reverse("workers:model-list")).content.decode()
    assert "<th scope=\"row\">Local weights</th><td>qwen2-vl-2b</td>" in models_page
    assert "<td>a1</td>" in models_page and "/srv/models" not in models_page
    # the run page: filters in words, kinds by name, the heatmap in colour with values, the model colours
    run2 = world["run2"]
    run_page = client.get(reverse("workers:run-detail", args=[run2.pk])).content.decode()
    assert "items: status: approved" in run_page
    heatmap = run_page.split('id="robustness-harmful"')[1].split("</table>")[0]
    assert "Misleading hint" in heatmap and "misleading_hint" not in heatmap.split("<tbody>")[1]
    assert re.search(r'<td style="background: #[0-9a-f]{6}; color: #(000000|ffffff)" title="accuracy on the '
                     r'perturbed variants [\d.]+%; drop [+-][\d.]+ pp', heatmap)
    assert re.search(r'<span class="v">[\d.]+%</span><span class="d">drop [+-][\d.]+ pp</span>', heatmap)
    for endpoint in run2.endpoints.all():
        assert f"background: {model_colour(endpoint.pk)}" in run_page, endpoint.name
    assert model_colour(run2.endpoints.get(name="oracle-vlm").pk).lower() in run_page.split('id="stage-chart"')[1]
    if "Paired comparisons" in run_page:
        assert re.search(r"p (=|&lt;|<|&gt;) [\d.]+ <span class=\"muted\">\(McNemar", run_page)
    # the case page: the rule's name and description, its evidence as a table, no JSON
    case_page = client.get(reverse("adjudication:case-detail", args=[world["case"].pk])).content.decode()
    why = case_page.split('id="why-this-case"')[1].split("</ul>")[0]
    rule = RULES[world["case"].rule_names[0]]
    assert rule.title in why and rule.description in why and 'class="kv-table compact evidence"' in why
    assert "Models agreeing" in why or "wrong under" in why
    queue = client.get(reverse("adjudication:queue")).content.decode()
    assert rule.title in queue.split("<tbody>")[1]
    # the API names the rules too (display fields beside the codes)
    api = client.get(reverse("adjudication:api-case-detail", args=[world["case"].pk])).json()
    assert api["rule_titles"] == [RULES[r].title for r in api["rules"]]
