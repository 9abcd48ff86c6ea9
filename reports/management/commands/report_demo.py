"""The demo's signed model report (scripts/demo.sh): a report of the demo run (and release), with
acceptance criteria, generated here, signed by the demo auditor with their password, its files written out
and checked with report_verify's check. For the local demo only (MEDR2_DEBUG=1)."""
from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.selectors import user_find
from common.errors import ServiceError
from reports import selectors
from reports.models import BuildStatus, Meaning
from reports.services import (
    report_create,
    report_file_verify,
    report_generate,
    report_sign,
    report_version_build,
    signed_copy_build,
)
from workers.selectors import run_list

TITLE = "Demo model report: tiny VLM and two blind baselines on the demo test split"
SCOPE = ("Demonstration only: how the platform reports a model to a governance board. The model is a tiny VLM with "
         "random weights, evaluated on synthetic phantoms; no clinical use is intended or supported.")
OUT_OF_SCOPE = "Any clinical decision; real patient images; the model's behaviour outside the demo's phantom set."
LIMITATIONS = "Synthetic phantoms and a randomly initialised model: the numbers show the report, not a model."
CRITERIA = [
    {"metric": "step_accuracy", "model": "*", "op": ">=", "threshold": 0.5, "note": "above a coin toss"},
    {"metric": "chain_accuracy", "model": "*", "op": ">=", "threshold": 0.2, "on": "lo",
     "note": "the whole interval above 20%"},
    {"metric": "robustness.misleading_hint.harmful_flip_rate", "model": "*", "op": "<=", "threshold": 0.2},
]


class Command(BaseCommand):
    help = ("Make the demo's signed model report: the latest scored run (and the release, if named), generated "
            "here, signed by --signer with the demo password; writes its PDF, signed PDF and JSON to --out.")

    def add_arguments(self, parser):
        parser.add_argument("--user", default="demo-auditor", help="who creates and generates it")
        parser.add_argument("--signer", default="demo-auditor", help="who signs it (as author)")
        parser.add_argument("--password-env", default="MEDR2_DEMO_PASSWORD",
                            help="the environment variable holding the signer's password (default: the demo's)")
        parser.add_argument("--run", default="latest", help="a run id, or latest (the newest scored run)")
        parser.add_argument("--release", default="", help="the release version the run evaluated, if any")
        parser.add_argument("--out", default="", help="write the files into this folder")
        parser.add_argument("--skip-if-exists", action="store_true", help="a signed demo report exists: reuse it")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **o):
        if not settings.DEBUG:
            raise CommandError("the demo report signs with the demo password: local demo only (MEDR2_DEBUG=1)")
        actor, signer = user_find(username=o["user"]), user_find(username=o["signer"])
        if actor is None or signer is None:
            raise CommandError(f"no user {o['user'] if actor is None else o['signer']!r} (run create_demo_users)")
        existing = selectors.report_list().filter(title=TITLE).first() if o["skip_if_exists"] else None
        version = selectors.version_list(report=existing).first() if existing else None
        try:
            if version is None or version.status != BuildStatus.READY or not version.n_signatures:
                version = self._make(actor, signer, o)
            else:
                self.stdout.write(f"Demo report {existing.pk} v{version.number} exists and is signed.")
        except (ValidationError, ServiceError) as exc:
            raise CommandError("; ".join(exc.messages) if isinstance(exc, ValidationError) else exc.message) from exc
        if o["out"]:
            self._write(version, Path(o["out"]))

    def _make(self, actor, signer, o):
        runs = run_list().exclude(scored_at=None).order_by("-pk")
        run = runs.first() if o["run"] == "latest" else runs.filter(pk=int(o["run"])).first()
        if run is None:
            raise CommandError(f"no scored run {o['run']!r}: run the demo evaluation first")
        release = selectors.release_by_version(version=o["release"]) if o["release"] else None
        if o["release"] and release is None:
            raise CommandError(f"no release {o['release']!r}")
        report = report_create(actor=actor, title=TITLE, runs=[run], release=release, scope=SCOPE,
                               out_of_scope=OUT_OF_SCOPE, limitations=LIMITATIONS, criteria=CRITERIA,
                               reason="the demo's criteria")
        version = report_generate(report=report, actor=actor, queue=False)
        bar = None if o["no_progress"] else tqdm(desc="report", total=3, unit="step")

        def progress(step: str, done: int, total: int) -> None:
            if bar is not None:
                bar.set_description(step)
                bar.n = done
                bar.refresh()

        version = report_version_build(version_id=version.pk, actor=actor, progress=progress)
        if bar is not None:
            bar.close()
        if version.status != BuildStatus.READY:
            raise CommandError(f"report version {version.pk} {version.status}: {version.error}")
        password = os.environ.get(o["password_env"], "medr2-demo-pass")
        signature = report_sign(version=version, user=signer, password=password, meaning=Meaning.AUTHOR)
        copy = selectors.signed_copy_latest(version=version)
        if copy is not None:
            signed_copy_build(copy_id=copy.pk)   # done already when Celery runs eagerly (the demo): then quiet
        self.stdout.write(f"Report {report.pk} v{version.number}: content hash {version.document_hash}, "
                          f"acceptance {version.summary.get('verdict')}; signed as {signature.meaning} by "
                          f"{signature.signer_name} ({signature.signer_role}) at {signature.signed_at:%Y-%m-%d %H:%M}")
        return version

    def _write(self, version, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        name = f"report-{version.report_id}-v{version.number}"
        files = {f"{name}.pdf": selectors.version_file(pk=version.pk, field="pdf"),
                 f"{name}.json": selectors.version_file(pk=version.pk, field="document_json")}
        copy = selectors.signed_copy_latest(version=version, ready=True)
        if copy is not None:
            files[f"{name}-signed.pdf"] = selectors.signed_copy_pdf(pk=copy.pk)
        for filename, data in files.items():
            (folder / filename).write_bytes(data)
            check = report_file_verify(data=data, version_id=version.pk)
            if not check.ok:
                raise CommandError(f"{filename} does not verify: {'; '.join(check.problems)}")
            self.stdout.write(f"{check.sha256}  {folder / filename}  (verifies)")
        self.stdout.write(self.style.SUCCESS(f"Signed demo report written to {folder}; check a file with "
                                             f"`manage.py report_verify FILE --version {version.pk}`"))
