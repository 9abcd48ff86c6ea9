"""EvaluationRun.split (patient-level split filter) and Prediction.box (the box a model gave).

Existing runs evaluated every split: they migrate to `all`. New runs default to `test`."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("workers", "0002_prediction_rescore"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluationrun",
            name="split",
            field=models.CharField(choices=[("test", "test (held out; the benchmark default)"), ("val", "val"),
                                            ("train", "train (what baselines are fitted on)"),
                                            ("all", "all splits (results broken down per split)")],
                                   db_index=True, default="all", max_length=8),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name="evaluationrun",
            name="split",
            field=models.CharField(choices=[("test", "test (held out; the benchmark default)"), ("val", "val"),
                                            ("train", "train (what baselines are fitted on)"),
                                            ("all", "all splits (results broken down per split)")],
                                   db_index=True, default="test",
                                   help_text="patient-level split evaluated: only variants of items whose image's "
                                             "split group falls in it (benchmark runs: test)",
                                   max_length=8),
        ),
        migrations.AddField(
            model_name="prediction",
            name="box",
            field=models.JSONField(blank=True, null=True,
                                   help_text="the box the model gave, [x0, y0, x1, y1] pixels: box items and joint "
                                             "answer + box items"),
        ),
    ]
