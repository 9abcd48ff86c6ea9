"""Render a model report to a folder: report.json (the canonical JSON whose SHA-256 is the content hash
signatures bind to), report.html and report.pdf, and print each file's SHA-256."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from reports.document import canonical_json, document_hash, report_document
from reports.render import render_html, render_pdf
from reports.selectors import release_by_version, run_list_by_ids


def _ids(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--runs takes run ids separated by commas, got {text!r}") from None
    if not ids:
        raise CommandError("--runs names no run")
    return ids


class Command(BaseCommand):
    help = ("Write report.json, report.html and report.pdf of a model report for the runs named (evaluated on a "
            "release, if named) into --out, and print their SHA-256 (docs/reports.md).")

    def add_arguments(self, parser):
        parser.add_argument("--runs", required=True, help="run ids, comma-separated (scored runs)")
        parser.add_argument("--release", default="", help="the release version the runs evaluated")
        parser.add_argument("--scope", default="", help="scope and intended use, as the requester states it")
        parser.add_argument("--out-of-scope", default="", help="what the report does not cover")
        parser.add_argument("--limitations", default="", help="the author's limitations text")
        parser.add_argument("--criteria", default="", help="acceptance criteria: a JSON file (a list, or "
                                                            "{\"criteria\": [...]})")
        parser.add_argument("--out", required=True, help="folder to write into (created if missing)")

    def handle(self, *args, runs, release, scope, out_of_scope, limitations, criteria, out, **options):
        found, missing = run_list_by_ids(ids=_ids(runs))
        if missing:
            raise CommandError(f"no run with id {', '.join(map(str, missing))}")
        rel = None
        if release:
            rel = release_by_version(version=release)
            if rel is None:
                raise CommandError(f"no release {release!r}")
        rules = None
        if criteria:
            try:
                rules = json.loads(Path(criteria).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CommandError(f"cannot read the criteria file: {exc}") from None
        started = time.perf_counter()
        try:
            document = report_document(runs=found, release=rel, scope=scope, out_of_scope=out_of_scope,
                                       limitations=limitations, criteria=rules)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        html = render_html(document)
        pdf = render_pdf(document, html=html)
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        files = {"report.json": canonical_json(document), "report.html": html.encode("utf-8"), "report.pdf": pdf}
        for name, data in files.items():
            (folder / name).write_bytes(data)
            self.stdout.write(f"{hashlib.sha256(data).hexdigest()}  {folder / name}")
        self.stdout.write(self.style.SUCCESS(
            f"content hash {document_hash(document)} · {len(document['models'])} models · "
            f"acceptance: {document['sections']['acceptance']['summary']['verdict']} · "
            f"rendered in {time.perf_counter() - started:.1f} s"))
