"""Seed the 4 stages and 31 task categories (idempotent; curator edits are kept)."""
from django.db import migrations


def seed(apps, schema_editor):
    from annotation.taxonomy_seed import seed_taxonomy

    seed_taxonomy(apps.get_model("annotation", "Stage"), apps.get_model("annotation", "TaskCategory"))


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
