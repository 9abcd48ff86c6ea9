#!/usr/bin/env python
"""Server time of every page at the paper's scale, in PostgreSQL.

    .venv/bin/python bench/ui_latency.py                       # 110,000 items, 1.1M predictions
    .venv/bin/python bench/ui_latency.py --items 20000 --models 5 --requests 100
    .venv/bin/python bench/ui_latency.py --scale 0.02 --small 500 --requests 5   # a quick check that it runs

Fill (untimed, COPY into a fresh database `medr2_bench`): images with lesion and anatomy boxes,
one 4-step chain per image (one item per stage), a clean variant per item plus a misleading hint on
every tenth, `--models` endpoints answering every variant in one scored run (>= 1M predictions at
the defaults), Label Studio batches with annotations on a tenth of the images (the queue's "did this
reader annotate it" checks have rows to look at), and adjudication cases on `--flag-rate` of the
items with a mix of open, assigned, tied and resolved ones. The run is then scored (`run_score`: the run
page shows every metric), and the objects the other pages show are made by the services at that scale
(`extras`): an import of three real PNGs, a shortcut audit, a draft release of every approved item, a
queued and a completed fine-tuning job, a model report generated, built and signed.

Timed: full Django requests through the test client (middleware, session, selectors, templates),
`--requests` per page kind: the adjudication pages as an adjudicator and as a curator (the queue's first,
a filtered and a deep page, case pages of random cases, the agreement dashboard), then EVERY page as
every role that may open it — the pages of tests/e2e/pages.py, the list the browser test visits, read
from the URLconf (a new page cannot be left out; what it skips answers files or JSON, with the reason
there). Baseline: the login page, a bare Django page through the same stack, in the same run. Prints
p50/p95 in ms against the 150 ms target, the ratio to the baseline, and the number of SQL queries per
page at a small fill and at full scale (they must be equal: no page grows with the data).
"""
from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from _django import peak_rss_mib, setup_django

TARGET_MS = 150
ROLES = ("annotator", "adjudicator", "curator", "auditor", "admin")     # bench-<role> users


def copy_rows(model, rows) -> int:
    """COPY `rows` (field name -> value; ids included) into the model's table; every other concrete
    field takes its default, '' for blank text, None for nullable, now() for auto timestamps."""
    from django.db import connection
    from django.db.models import JSONField
    from django.utils import timezone

    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return 0
    now = timezone.now()
    fields = [f for f in model._meta.concrete_fields]
    columns, getters = [], []
    for f in fields:
        name = f.attname
        columns.append(f.column)
        if name in first:
            getters.append((name, None, isinstance(f, JSONField)))
        elif getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            getters.append((None, now, False))
        elif f.has_default():
            default = f.get_default()
            getters.append((None, json.dumps(default) if isinstance(f, JSONField) else default, False))
        elif f.null:
            getters.append((None, None, False))
        elif f.blank:
            getters.append((None, "", False))
        else:
            raise ValueError(f"{model.__name__}.{name} needs a value")
    sql = f'COPY {model._meta.db_table} ({", ".join(columns)}) FROM STDIN'
    n = 0
    with connection.cursor() as cursor:
        with cursor.cursor.copy(sql) as copy:
            for row in itertools.chain([first], rows):
                copy.write_row([(json.dumps(row[k]) if is_json and row[k] is not None else row[k]) if k else const
                                for k, const, is_json in getters])
                n += 1
    return n


def reset_sequences(*models) -> None:
    from django.core.management.color import no_style
    from django.db import connection

    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(sql)


def fill(*, n_items: int, n_models: int, flag_rate: float, seed: int, id_base: int = 0) -> dict:
    """The synthetic benchmark at this scale; returns ids the timing needs."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from accounts.roles import Role
    from accounts.services import user_create
    from adjudication.models import AdjudicationCase, CaseReading
    from annotation.models import Chain, Finding, GroundingBox, Image, QAItem, TaskCategory, Variant
    from labelstudio.models import AnnotationBatch, AnnotationTask, LabelStudioAnnotation
    from workers.models import EvaluationRun, ModelEndpoint, Prediction

    rng = random.Random(seed)
    users = {}
    for name, role in (("bench-adjudicator", Role.ADJUDICATOR), ("bench-adjudicator-2", Role.ADJUDICATOR),
                       ("bench-curator", Role.CURATOR), ("bench-annotator", Role.ANNOTATOR),
                       ("bench-auditor", Role.AUDITOR), ("bench-admin", Role.ADMIN)):
        users[name] = (get_user_model().objects.filter(username=name).first()
                       or user_create(username=name, email=f"{name}@example.org", password="pw-Secret-123",
                                      roles=[role], actor=None))
    cats = {}
    for pk, stage, kind in TaskCategory.objects.filter(
            answer_type__in=["single_choice", "yes_no", "box"]).values_list("pk", "stage__order", "answer_type"):
        cats.setdefault(stage, []).append((pk, kind))
    stage_ids = dict(TaskCategory.objects.values_list("stage__order", "stage_id").distinct())
    n_images = n_items // 4
    b = id_base
    images, findings, boxes, chains, items, variants = [], [], [], [], [], []
    for i in range(n_images):
        img = b + i + 1
        images.append({"id": img, "sha256": uuid.UUID(int=rng.getrandbits(128)).hex * 2, "file": f"bench/{img}.png",
                       "width": 512, "height": 512, "modality": rng.choice(["CT", "MR", "CR"]),
                       "body_region": "ABDOMEN", "source_format": "dicom", "split_group": f"bench-patient-{img // 2}"})
        for k, (kind, label) in enumerate((("lesion", "nodule"), ("anatomy", "liver"), ("anatomy", "spleen"))):
            fid = (b + i) * 3 + k + 1
            findings.append({"id": fid, "image_id": img, "kind": kind, "label": label, "source": "phantom"})
            x = 40 + 60 * k
            boxes.append({"id": fid, "finding_id": fid, "image_id": img, "x0": x, "y0": x, "x1": x + 50, "y1": x + 40,
                          "label": label, "source": "phantom"})
        chains.append({"id": img, "image_id": img, "seed": 0})
    items = []
    for i in range(n_images):
        for step in range(1, 5):
            pk = (b + i) * 4 + step
            cat, kind = rng.choice(cats[step])
            if kind == "box":
                options, gold = [], [40.0, 40.0, 90.0, 80.0]
            elif kind == "yes_no":
                options, gold = ["yes", "no"], rng.choice(["yes", "no"])
            else:
                options = ["benign", "malignant", "indeterminate", "normal"]
                gold = rng.choice(options)
            items.append({"id": pk, "item_key": uuid.UUID(int=rng.getrandbits(128)), "version": 1,
                              "is_current": True, "chain_id": b + i + 1, "step": step, "stage_id": stage_ids[step],
                              "category_id": cat, "question": f"Question {pk} about the finding?", "options": options,
                              "gold_answer": gold, "status": "approved", "content_hash": f"{pk:064x}"})
    vid = b * 2
    for it in items:
        kinds = ["clean"] + (["misleading_hint"] if it["id"] % 10 == 0 and it["options"] else [])
        for kind in kinds:
            vid += 1
            letter = chr(65 + it["options"].index(it["gold_answer"])) if it["options"] else None
            expected = {"value": it["gold_answer"], "letter": letter}
            variants.append({"id": vid, "item_id": it["id"], "kind": kind, "seed": 0, "prompt": it["question"],
                             "options": it["options"], "expected_answer": expected, "content_hash": f"{vid:064x}",
                             "params": {}})
    endpoints = list(ModelEndpoint.objects.order_by("pk"))
    for m in range(len(endpoints), n_models):
        # a model backend (planted), not a baseline: the case page shows models' answers, never baselines'
        endpoints.append(ModelEndpoint.objects.create(name=f"bench-model-{m}", backend="oracle",
                                                      prompt_template_hash="0" * 64))
    endpoints = endpoints[:n_models]
    run = EvaluationRun.objects.create(name=f"bench {n_items}", status="completed", total=len(variants) * n_models,
                                       n_variants=len(variants), metrics={"models": {}}, is_reference=True)
    run.endpoints.set(endpoints)
    item_by_id = {it["id"]: it for it in items}
    def predictions():
        pid = b * 20
        for v in variants:
            it = item_by_id[v["item_id"]]
            for e in endpoints:
                pid += 1
                if it["options"]:
                    letter = chr(65 + rng.randrange(len(it["options"])))
                    parsed, correct, iou = letter, letter == v["expected_answer"]["letter"], None
                else:
                    parsed, correct, iou = [40.0, 42.0, 88.0, 80.0], True, 0.9
                yield {"id": pid, "run_id": run.pk, "endpoint_id": e.pk, "variant_id": v["id"],
                       "item_id": it["id"], "raw_output": f"The answer is {parsed}.", "outcome": "answered",
                       "parsed": parsed, "parse_method": "letter_bare", "correct": correct, "iou": iou,
                       "latency_ms": 12.0}
    # Label Studio annotations on a tenth of the images, by the annotator and the second adjudicator
    batch = AnnotationBatch.objects.create(name=f"bench {n_items}", status="pushed")
    tasks, annotations = [], []
    for i in range(0, n_images, 10):
        tid = b + i + 1
        tasks.append({"id": tid, "batch_id": batch.pk, "image_id": b + i + 1, "status": "done", "n_annotations": 1})
        author = users["bench-adjudicator-2" if i % 20 == 0 else "bench-annotator"]
        annotations.append({"id": tid, "task_id": tid, "ls_annotation_id": tid, "author_id": author.pk,
                            "result": [], "result_hash": "0" * 64})
    cases, readings = [], []
    flagged = [it for it in items if rng.random() < flag_rate]
    adjudicators = [users["bench-adjudicator"], users["bench-adjudicator-2"]]
    for n, it in enumerate(flagged):
        cid = b + n + 1
        status = rng.choices(["open", "resolved", "in_progress", "tie"], weights=[70, 24, 4, 2])[0]
        hit = {"rule": "model_consensus", "priority": round(rng.uniform(0.3, 1.0), 3),
               "models": [e.name for e in endpoints[:3]], "item_id": it["id"],
               "evidence": {"answer": "x", "gold": it["gold_answer"], "agree": 3, "answered": n_models}}
        cases.append({"id": cid, "key": f"item:{it['item_key']}", "item_id": it["id"], "item_key": it["item_key"],
                      "image_id": it["chain_id"], "stage_id": it["stage_id"], "category_id": it["category_id"],
                      "modality": images[it["chain_id"] - b - 1]["modality"], "rules": ",model_consensus,",
                      "hits": [hit], "priority": hit["priority"], "run_ids": [run.pk], "status": status,
                      "outcome": "confirmed" if status == "resolved" else "", "double_read": status == "tie"})
        if status != "open" or n % 3 == 0:
            reader = adjudicators[n % 2]
            readings.append({"id": b + len(readings) + 1, "case_id": cid, "reader_id": reader.pk, "role": "primary",
                             "status": "submitted" if status != "open" else "assigned",
                             "verdict": "confirmed" if status != "open" else "", "time_spent_s": 30.0})
    t0 = time.perf_counter()
    with transaction.atomic():
        copy_rows(Image, images)
        copy_rows(Finding, findings)
        copy_rows(GroundingBox, boxes)
        copy_rows(Chain, chains)
        copy_rows(QAItem, items)
        copy_rows(Variant, variants)
        n_predictions = copy_rows(Prediction, predictions())
        copy_rows(AnnotationTask, tasks)
        copy_rows(LabelStudioAnnotation, annotations)
        copy_rows(AdjudicationCase, cases)
        copy_rows(CaseReading, readings)
        reset_sequences(Image, Finding, GroundingBox, Chain, QAItem, Variant, Prediction, AnnotationTask,
                        LabelStudioAnnotation, AdjudicationCase, CaseReading)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"users": users, "cases": [c["id"] for c in cases], "n_predictions": n_predictions, "n_items": len(items),
            "n_cases": len(cases), "fill_s": time.perf_counter() - t0, "open_cases": [
                c["id"] for c in cases if c["status"] == "open"],
            "ids": {"image": b + 1, "item": items[0]["id"], "chain": b + 1, "pending_chain": b + 2, "run": run.pk,
                    "case": next((c["id"] for c in cases if c["status"] == "open"), b + 1),
                    "resolved_case": next((c["id"] for c in cases if c["status"] == "resolved"), b + 1),
                    "ls_batch": batch.pk, "ls_task": tasks[0]["id"] if tasks else None,
                    "category": TaskCategory.objects.get(pk=items[0]["category_id"]).code}}


def extras(fillinfo: dict, tmp: Path) -> None:
    """The objects every other page shows, made by the services at this fill's scale (untimed); their ids
    join fillinfo["ids"] under the names tests/e2e/pages.py's page list reads."""
    import io

    from django.conf import settings
    from PIL import Image as PILImage

    from annotation.models import Image, QAItem
    from annotation.services.images import BytesSource, image_assign, images_import
    from common.signing import generate_signing_key
    from finetune.models import FineTuneJob
    from finetune.services import job_create
    from releases.services import release_create
    from reports.models import Meaning
    from reports.services import report_create, report_generate, report_sign, report_version_build
    from validity.services import shortcut_audit_run
    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.scoring import run_score

    ids, users = fillinfo["ids"], fillinfo["users"]
    curator, auditor, admin = users["bench-curator"], users["bench-auditor"], users["bench-admin"]
    settings.MEDR2_SIGNING_KEY = settings.MEDR2_SIGNING_KEY or generate_signing_key()
    t0 = time.perf_counter()
    run = EvaluationRun.objects.get(pk=ids["run"])
    run_score(run=run, actor=None, n_resamples=200)
    # the readers see the images assigned to them: a thousand each
    assigned = Image.objects.filter(pk__gte=ids["image"]).order_by("pk")[:1000]
    for name in ("bench-annotator", "bench-adjudicator", "bench-adjudicator-2"):
        image_assign(images=assigned, user=users[name], actor=None)
    QAItem.objects.filter(chain_id=ids["pending_chain"]).update(status=QAItem.Status.DRAFT)
    pngs = []
    for n in range(3):
        buf = io.BytesIO()
        png = PILImage.new("L", (256, 256), 40 + 60 * n)
        png.putpixel((n, 0), fillinfo["n_items"] % 256)           # each fill imports its own files
        png.putpixel((n, 1), fillinfo["n_items"] // 256 % 256)
        png.save(buf, format="PNG")
        pngs.append(BytesSource(f"bench-{fillinfo['n_items']}-{n}.png", buf.getvalue()))
    batch = images_import(sources=pngs, actor=curator)
    imported = batch.images.order_by("pk").first()
    ids.update(import_batch=batch.pk, series_image=imported.pk if imported else ids["image"])
    audit = shortcut_audit_run(filters={"status": "approved", "modality": "CT"}, split="test", actor=curator,
                               params={"seed": 0, "n_boot": 200})
    release = release_create(actor=admin, title=f"bench release at {fillinfo['n_items']:,} items")
    model_dir = tmp / f"tiny-vlm-{fillinfo['n_items']}"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps({"model_type": "llava", "vision_config": {}}))
    base = endpoint_create(name=f"bench-vlm-{fillinfo['n_items']}", backend="transformers", actor=curator,
                           parameters={"path": str(model_dir)})
    job = job_create(actor=curator, base_endpoint=base, recipe="stepwise", steps=20, release=release, start=False)
    done = job_create(actor=curator, base_endpoint=base, recipe="mixed", steps=12, release=release, start=False)
    history = [{"step": k, "loss": 2.0 / k, **({"val_loss": 2.2 / k} if k % 2 == 0 else {})} for k in range(1, 13)]
    FineTuneJob.objects.filter(pk=done.pk).update(status="completed", progress={
        "step": 12, "steps": 12, "loss": history[-1]["loss"], "tokens": 3072, "history": history})
    report = report_create(actor=auditor, title=f"bench report at {fillinfo['n_items']:,} items", runs=[run],
                           release=release, criteria=[{"metric": "step_accuracy", "model": "*", "op": ">=",
                                                       "threshold": 0.5}])
    version = report_version_build(version_id=report_generate(report=report, actor=auditor, queue=False).pk,
                                   actor=auditor)
    report_sign(version=version, user=auditor, password="pw-Secret-123", meaning=Meaning.AUTHOR)
    ids.update(shortcut_audit=audit.pk, release=release.pk, job=job.pk, done_job=done.pk, report=report.pk,
               version=version.pk)
    fillinfo["extras_s"] = time.perf_counter() - t0


def timed(client, url: str) -> tuple[float, int] | int:
    """Server time (ms) of one request to `url`, and the SQL queries of that page (counted on a
    separate request after a warm-up one, so per-process caches count as warm); the status code
    instead when the page refuses this user (403, or 404 for an object outside their scope)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    r = client.get(url)
    if r.status_code in (403, 404):
        return r.status_code
    with CaptureQueriesContext(connection) as ctx:
        r = client.get(url)
    queries = len(ctx.captured_queries)       # read now: the next request clears the connection's log
    assert r.status_code in (200, 302), f"{url}: {r.status_code}"
    t = time.perf_counter()
    r = client.get(url)
    elapsed = (time.perf_counter() - t) * 1000
    assert r.status_code in (200, 302)
    return elapsed, queries


def pages(fillinfo: dict) -> list[tuple[str, str, callable]]:
    """(page name, user, url function of a random generator): the adjudication pages with random cases,
    then every page of tests/e2e/pages.py as every role."""
    from tests.e2e.pages import visit_urls

    cases, open_cases = fillinfo["cases"], fillinfo["open_cases"] or fillinfo["cases"]
    out = [
        ("login page (baseline)", None, lambda r: "/login/"),
        ("queue, first page", "bench-adjudicator", lambda r: "/adjudication/"),
        ("queue, first page", "bench-curator", lambda r: "/adjudication/"),
        ("queue, filtered (stage S4, CT)", "bench-adjudicator", lambda r: "/adjudication/?stage=S4&modality=CT"),
        ("queue, page 100", "bench-curator", lambda r: "/adjudication/?page=100&status=all"),
        ("case page (random)", "bench-adjudicator", lambda r: f"/adjudication/cases/{r.choice(open_cases)}/"),
        ("case page (random)", "bench-curator", lambda r: f"/adjudication/cases/{r.choice(cases)}/"),
        ("queue API", "bench-adjudicator", lambda r: "/api/adjudication/cases/"),
        ("agreement dashboard", "bench-curator", lambda r: "/adjudication/agreement/"),
    ]
    for visit, url in visit_urls(fillinfo["ids"]):
        out += [(f"{visit.label} ({visit.name})", f"bench-{role}", lambda r, url=url: url) for role in ROLES]
    return out


def measure(fillinfo: dict, n: int, seed: int) -> list[dict]:
    from django.test import Client

    from common.collector import freeze_startup

    freeze_startup()    # what medr2/wsgi.py does in the served process: full collections skip start-up's objects
    rng = random.Random(seed)
    out = []
    for name, username, url_of in pages(fillinfo):
        client = Client()
        if username:
            client.force_login(fillinfo["users"][username])
        times, queries, refused = [], set(), None
        for _ in range(n):
            answer = timed(client, url_of(rng))
            if isinstance(answer, int):
                refused = answer
                break
            times.append(answer[0])
            queries.add(answer[1])
        row = {"page": name, "user": (username or "anonymous").removeprefix("bench-"), "refused": refused}
        if times:
            row.update(p50=statistics.median(times), queries=sorted(queries), n=len(times),
                       p95=statistics.quantiles(times, n=20)[-1] if len(times) >= 20 else max(times))
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=110_000)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply --items (0.02: a quick check)")
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--flag-rate", type=float, default=0.2)
    parser.add_argument("--requests", type=int, default=100, help="timed requests per page and user")
    parser.add_argument("--small", type=int, default=2000, help="items in the small fill (query counts)")
    args = parser.parse_args()
    n_items = max(400, round(args.items * args.scale))
    with tempfile.TemporaryDirectory() as tmp:
        db = setup_django(Path(tmp), postgres=True)
        import logging

        from django.conf import settings

        import common.dispatch

        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        logging.disable(logging.WARNING)
        common.dispatch.send = lambda task, *a, **k: True      # no worker here: nothing is sent
        small = fill(n_items=args.small, n_models=args.models, flag_rate=args.flag_rate, seed=1)
        extras(small, Path(tmp))
        small_rows = measure(small, 1, seed=1)
        small_q = {(m["page"], m["user"]): m.get("queries", []) for m in small_rows}
        # clear the small fill's cases so the full-scale numbers are about the full fill only
        from django.core.cache import cache

        cache.clear()
        big = fill(n_items=n_items, n_models=args.models, flag_rate=args.flag_rate, seed=2,
                   id_base=args.small * 10)
        extras(big, Path(tmp))
        print(f"{db}: {big['n_items']:,} items, {big['n_predictions']:,} predictions, {big['n_cases']:,} cases "
              f"(+ a small fill of {small['n_items']:,} items); filled by COPY in {big['fill_s']:.0f} s, scored "
              f"and the other pages' objects made in {big['extras_s']:.0f} s")
        results = measure(big, args.requests, seed=2)
        report(results, small_q)


def report(results: list[dict], small_q: dict) -> None:
    timed_rows = [m for m in results if "p95" in m]
    base = timed_rows[0]
    print(f"\n{'page':46} {'user':12} {'p50 ms':>8} {'p95 ms':>8} {'p95/base':>9} {'SQL small':>10} {'SQL full':>9}")
    for m in timed_rows:
        flag = "  OVER" if m["p95"] > TARGET_MS and m is not base else ""
        small = ",".join(map(str, small_q.get((m["page"], m["user"]), [])))
        print(f"{m['page'][:46]:46} {m['user']:12} {m['p50']:8.1f} {m['p95']:8.1f} {m['p95'] / base['p95']:9.1f}"
              f" {small:>10} {','.join(map(str, m['queries'])):>9}{flag}")
    refused = [m for m in results if m["refused"]]
    print(f"\nrefused ({len(refused)} page × user, expected: the role may not open it): "
          + ", ".join(f"{m['page'].split()[0]} {m['user']} {m['refused']}" for m in refused))
    over = [m for m in timed_rows[1:] if m["p95"] > TARGET_MS]
    worst = max(timed_rows[1:], key=lambda m: m["p95"])
    print(f"\nworst p95: {worst['page']} ({worst['user']}) {worst['p95']:.1f} ms (target <= {TARGET_MS} ms); "
          f"{len(over)} of {len(timed_rows) - 1} page × user over the target; peak RSS {peak_rss_mib():.0f} MiB")
    differ = [m for m in timed_rows if small_q.get((m["page"], m["user"])) != m["queries"]]
    print("SQL queries per page: " + ("the same at both scales" if not differ else "DIFFERENT between scales: "
          + "; ".join(f"{m['page']} ({m['user']}) {small_q.get((m['page'], m['user']))} -> {m['queries']}"
                      for m in differ)))


if __name__ == "__main__":
    main()
