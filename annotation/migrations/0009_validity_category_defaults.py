"""Benchmark validity (issue 12): the 31 seeded categories get the new default rules and templates.

S1/S3/S4 questions refer to "the largest lesion" instead of naming the finding, S3/S4 ask for the
answer together with a box around the lesion, image quality / contrast phase / enhancement /
severity / grade read the phantoms' new ground truth, rule-out and supporting-finding are decided by
the lesion's visible hallmarks, report statements are drawn from plausible lesion profiles.

Every category whose code is one of the 31 seeded codes is reset (rule, template, alternative
templates); categories a curator added are left alone. Existing items keep their text: regenerate
chains with a new seed to get the new items (docs/chains.md).
"""
from django.db import migrations


def apply_defaults(apps, schema_editor):
    from annotation.chains.definitions import DEFAULT_RULES
    from annotation.taxonomy_seed import CATEGORIES

    TaskCategory = apps.get_model("annotation", "TaskCategory")
    templates = {code: template for code, _, _, _, template in CATEGORIES}
    for category in TaskCategory.objects.filter(code__in=list(DEFAULT_RULES)):
        category.rule = DEFAULT_RULES[category.code]
        category.prompt_template = templates[category.code]
        category.alt_templates = []
        category.save(update_fields=["rule", "prompt_template", "alt_templates"])


class Migration(migrations.Migration):
    dependencies = [("annotation", "0008_validity_fields")]
    operations = [migrations.RunPython(apply_defaults, migrations.RunPython.noop)]
