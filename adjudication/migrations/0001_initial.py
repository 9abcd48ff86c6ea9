"""Adjudication's models move here from `annotation` (cases, readings) and `workers` (the rescore
history that links a prediction to the case that corrected its gold). No table changes."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def relabel_content_types(model_names, from_app, to_app):
    """Keep each moved model's content type (its id, so its permissions and admin log entries) by
    relabelling it; on a fresh database there is none yet and nothing happens."""
    def forward(apps, schema_editor):
        content_type = apps.get_model("contenttypes", "ContentType")
        for model in model_names:
            if not content_type.objects.filter(app_label=to_app, model=model).exists():
                content_type.objects.filter(app_label=from_app, model=model).update(app_label=to_app)
    return forward


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotation', '0009_validity_category_defaults'),
        ('workers', '0003_run_split_prediction_box'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # the tables stay where they are (same names): only Django's idea of which app owns them moves
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.CreateModel(
                name='AdjudicationCase',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('key', models.CharField(help_text='item:<item_key> or image:<id>', max_length=80, unique=True)),
                    ('item_key', models.UUIDField(blank=True, db_index=True, null=True)),
                    ('modality', models.CharField(blank=True, db_index=True, max_length=16)),
                    ('rules', models.CharField(help_text="',rule_a,rule_b,' (filterable on every database)", max_length=300)),
                    ('hits', models.JSONField(default=list, help_text='the rule hits: rule, priority, models, evidence')),
                    ('priority', models.FloatField()),
                    ('run_ids', models.JSONField(default=list, help_text='evaluation runs whose predictions raised it')),
                    ('status', models.CharField(choices=[('open', 'Open'), ('in_progress', 'in progress'), ('tie', 'awaiting third reader'), ('resolved', 'Resolved')], db_index=True, default='open', max_length=16)),
                    ('version', models.PositiveIntegerField(default=1, help_text='optimistic locking: bumped by every decision and assignment')),
                    ('double_read', models.BooleanField(default=False, help_text='two independent readings; a third reader breaks ties')),
                    ('outcome', models.CharField(blank=True, choices=[('confirmed', 'gold confirmed'), ('corrected', 'gold corrected'), ('ambiguous', 'ambiguous (excluded from releases)'), ('flawed', 'item flawed (rejected)')], max_length=16)),
                    ('outcome_answer', models.JSONField(blank=True, help_text='the corrected gold answer', null=True)),
                    ('resolved_at', models.DateTimeField(blank=True, null=True)),
                    ('rescore', models.JSONField(blank=True, help_text='what rescoring the corrected item changed', null=True)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('category', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.taskcategory')),
                    ('image', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='adjudication_cases', to='annotation.image')),
                    ('item', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='adjudication_cases', to='annotation.qaitem')),
                    ('resolved_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('result_item', models.ForeignKey(blank=True, help_text='the item version a correction created', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.qaitem')),
                    ('stage', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.stage')),
                ],
                options={
                    'db_table': 'annotation_adjudicationcase',
                    'ordering': ['-priority', 'id'],
                },
            ),
            migrations.CreateModel(
                name='CaseReading',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('role', models.CharField(choices=[('primary', 'Primary'), ('second', 'second reader'), ('tiebreak', 'third reader (tie-break)')], default='primary', max_length=16)),
                    ('status', models.CharField(choices=[('assigned', 'Assigned'), ('submitted', 'Submitted'), ('withdrawn', 'Withdrawn')], default='assigned', max_length=16)),
                    ('assigned_at', models.DateTimeField(auto_now_add=True)),
                    ('verdict', models.CharField(blank=True, choices=[('confirmed', 'gold confirmed'), ('corrected', 'gold corrected'), ('ambiguous', 'ambiguous (excluded from releases)'), ('flawed', 'item flawed (rejected)')], max_length=16)),
                    ('answer', models.JSONField(blank=True, help_text='corrected: the new gold (option text(s) or box)', null=True)),
                    ('comment', models.TextField(blank=True)),
                    ('time_spent_s', models.FloatField(blank=True, help_text='seconds the case page was visible', null=True)),
                    ('submitted_at', models.DateTimeField(blank=True, null=True)),
                    ('assigned_by', models.ForeignKey(blank=True, help_text='empty: claimed by the reader or assigned by the system', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('case', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='readings', to='adjudication.adjudicationcase')),
                    ('reader', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='case_readings', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'annotation_casereading',
                    'ordering': ['case_id', 'assigned_at', 'id'],
                },
            ),
            migrations.CreateModel(
                name='PredictionRescore',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('correct_before', models.BooleanField()),
                    ('correct_after', models.BooleanField()),
                    ('iou_before', models.FloatField(blank=True, null=True)),
                    ('iou_after', models.FloatField(blank=True, null=True)),
                    ('reason', models.CharField(max_length=300)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('case', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='adjudication.adjudicationcase')),
                    ('gold_item', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.qaitem')),
                    ('prediction', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='rescores', to='workers.prediction')),
                ],
                options={
                    'db_table': 'workers_predictionrescore',
                    'ordering': ['id'],
                },
            ),
            migrations.AddIndex(
                model_name='adjudicationcase',
                index=models.Index(fields=['status', '-priority', 'id'], name='annotation__status_bce9e8_idx'),
            ),
            migrations.AddIndex(
                model_name='adjudicationcase',
                index=models.Index(fields=['-priority', 'id'], name='annotation__priorit_53f335_idx'),
            ),
            migrations.AddIndex(
                model_name='adjudicationcase',
                index=models.Index(fields=['stage', 'status'], name='annotation__stage_i_ae1981_idx'),
            ),
            migrations.AddIndex(
                model_name='adjudicationcase',
                index=models.Index(fields=['category', 'status'], name='annotation__categor_4d3386_idx'),
            ),
            migrations.AddIndex(
                model_name='casereading',
                index=models.Index(fields=['reader', 'status'], name='annotation__reader__50b7a7_idx'),
            ),
            migrations.AddConstraint(
                model_name='casereading',
                constraint=models.UniqueConstraint(fields=('case', 'reader'), name='reading_one_per_reader'),
            ),
        ]),
        migrations.RunPython(relabel_content_types(["adjudicationcase", "casereading"], "annotation", "adjudication"),
                             relabel_content_types(["adjudicationcase", "casereading"], "adjudication", "annotation")),
        migrations.RunPython(relabel_content_types(["predictionrescore"], "workers", "adjudication"),
                             relabel_content_types(["predictionrescore"], "adjudication", "workers")),
    ]
