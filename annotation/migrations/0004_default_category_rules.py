"""Give every seeded task category its default derivation rule (only where none is set yet)."""
from django.db import migrations


def fill_rules(apps, schema_editor):
    from annotation.chains.definitions import DEFAULT_RULES

    TaskCategory = apps.get_model("annotation", "TaskCategory")
    for category in TaskCategory.objects.all():
        if not category.rule and category.code in DEFAULT_RULES:
            category.rule = DEFAULT_RULES[category.code]
            category.save(update_fields=["rule"])


class Migration(migrations.Migration):
    dependencies = [("annotation", "0003_chains_and_rules")]
    operations = [migrations.RunPython(fill_rules, migrations.RunPython.noop)]
