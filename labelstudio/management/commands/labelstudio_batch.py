"""manage.py labelstudio_batch — create a Label Studio annotation batch from filters, and push it."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.roles import Capability, user_can
from accounts.selectors import user_find, users_by_username
from labelstudio import selectors
from labelstudio.client import LabelStudioError
from labelstudio.services import batch_create, batch_push


class Command(BaseCommand):
    help = "Create an annotation batch (images or approved QA items, by filters) as --user; --push sends it now."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--user", required=True, help="a curator or admin; recorded in the audit trail")
        parser.add_argument("--qa", action="store_true", help="one task per current approved QA item (else per image)")
        parser.add_argument("--source-dataset", default="")
        parser.add_argument("--modality", default="")
        parser.add_argument("--category", default="", help="QA batches: a task category code")
        parser.add_argument("--limit", type=int, default=50)
        parser.add_argument("--annotators", type=int, default=1, help="annotators per task (maximum_annotations)")
        parser.add_argument("--readers", default="", help="comma-separated usernames of the radiologists")
        parser.add_argument("--mode", choices=["independent", "correction"], default="independent",
                            help="independent: no pre-fill (a blind read); correction: pre-filled boxes to correct")
        parser.add_argument("--push", action="store_true", help="push to Label Studio now (in this process)")
        parser.add_argument("--skip-if-exists", action="store_true", help="do nothing when a batch of this name exists")

    def handle(self, *args, name, user, qa, source_dataset, modality, category, limit, annotators, readers, push,
               skip_if_exists, mode, **opts):
        actor = user_find(username=user)
        if actor is None or not user_can(actor, Capability.MANAGE_ANNOTATION):
            raise CommandError(f"{user!r} is not a curator or admin")
        existing = selectors.batch_find(name=name)
        if existing is not None and skip_if_exists:
            batch = existing
            n_tasks = selectors.batch_task_count(batch=batch)
            self.stdout.write(f"batch {batch.pk} {name!r} exists ({n_tasks} tasks, {batch.status})")
        else:
            names = [r for r in readers.split(",") if r]
            reader_users, missing = users_by_username(usernames=names)
            if missing:
                raise CommandError(f"unknown readers among {names}")
            filters = {"source_dataset": source_dataset, "modality": modality, "limit": limit}
            if qa:
                selection = {"qa_items": selectors.batch_item_ids(category=category, **filters)}
            else:
                selection = {"images": selectors.batch_image_ids(**filters)}
            try:
                batch = batch_create(name=name, actor=actor, maximum_annotations=annotators, readers=reader_users,
                                     mode=mode, **selection)
            except ValidationError as exc:
                raise CommandError("; ".join(exc.messages)) from None
            self.stdout.write(f"batch {batch.pk} {name!r}: {selectors.batch_task_count(batch=batch)} task(s)")
        if push:
            try:
                result = batch_push(batch=batch, actor=actor)
            except LabelStudioError as exc:
                raise CommandError(str(exc)) from None
            where = (f"{len(result.reader_projects)} reader project(s)" if result.reader_projects
                     else f"Label Studio project {result.project_id}")
            self.stdout.write(f"pushed to {where}: {result.created} task(s) imported")
