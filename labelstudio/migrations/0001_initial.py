"""Label Studio's models move here from `annotation` (the app split). No table changes: the
models keep their tables (`db_table`), and their content types (and so permissions) move with them."""

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
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # the tables stay where they are (same names): only Django's idea of which app owns them moves
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.CreateModel(
                name='WebhookDelivery',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('body_sha256', models.CharField(max_length=64, unique=True)),
                    ('action', models.CharField(max_length=40)),
                    ('received_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ],
                options={
                    'db_table': 'annotation_webhookdelivery',
                },
            ),
            migrations.CreateModel(
                name='AnnotationBatch',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=200)),
                    ('description', models.TextField(blank=True)),
                    ('with_qa', models.BooleanField(default=False, help_text='tasks carry a QA item to answer')),
                    ('maximum_annotations', models.PositiveSmallIntegerField(default=1, help_text='annotators per task')),
                    ('status', models.CharField(choices=[('draft', 'Draft'), ('pushing', 'Pushing'), ('pushed', 'Pushed'), ('retrying', 'Retrying'), ('failed', 'Failed')], db_index=True, default='draft', max_length=16)),
                    ('ls_project_id', models.PositiveIntegerField(blank=True, null=True, unique=True)),
                    ('label_config_hash', models.CharField(blank=True, max_length=64)),
                    ('push_attempts', models.PositiveIntegerField(default=0)),
                    ('push_error', models.TextField(blank=True)),
                    ('next_retry_at', models.DateTimeField(blank=True, null=True)),
                    ('pushed_at', models.DateTimeField(blank=True, null=True)),
                    ('urls_expire_at', models.DateTimeField(blank=True, help_text='signed image URLs in the tasks expire then', null=True)),
                    ('synced_until', models.DateTimeField(blank=True, null=True)),
                    ('last_sync_at', models.DateTimeField(blank=True, null=True)),
                    ('last_sync_ok', models.BooleanField(null=True)),
                    ('last_sync_error', models.TextField(blank=True)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('readers', models.ManyToManyField(blank=True, related_name='annotation_batches', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'verbose_name_plural': 'annotation batches',
                    'db_table': 'annotation_annotationbatch',
                    'ordering': ['-id'],
                },
            ),
            migrations.CreateModel(
                name='AnnotationTask',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('ls_task_id', models.PositiveIntegerField(blank=True, null=True, unique=True)),
                    ('status', models.CharField(choices=[('pending', 'Pending'), ('open', 'Open'), ('done', 'Done')], db_index=True, default='pending', max_length=16)),
                    ('n_annotations', models.PositiveSmallIntegerField(default=0)),
                    ('agreement', models.JSONField(blank=True, help_text='annotation/labelstudio/agreement.py TaskAgreement', null=True)),
                    ('has_disagreement', models.BooleanField(db_index=True, default=False)),
                    ('ls_updated_at', models.DateTimeField(blank=True, help_text="task's updated_at in Label Studio at last pull", null=True)),
                    ('synced_at', models.DateTimeField(blank=True, null=True)),
                    ('batch', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tasks', to='labelstudio.annotationbatch')),
                    ('image', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='annotation_tasks', to='annotation.image')),
                    ('qa_item', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='annotation_tasks', to='annotation.qaitem')),
                ],
                options={
                    'db_table': 'annotation_annotationtask',
                    'ordering': ['id'],
                },
            ),
            migrations.CreateModel(
                name='AnnotatorDisagreement',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('kinds', models.JSONField(default=list, help_text='box_unmatched / box_label / attribute / answer')),
                    ('detail', models.JSONField(default=list)),
                    ('annotators', models.JSONField(default=list, help_text='user ids (None where unmapped)')),
                    ('status', models.CharField(choices=[('open', 'Open'), ('resolved', 'Resolved'), ('queued', 'Queued')], db_index=True, default='open', max_length=16)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('image', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.image')),
                    ('qa_item', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.qaitem')),
                    ('task', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='disagreement', to='labelstudio.annotationtask')),
                ],
                options={
                    'db_table': 'annotation_annotatordisagreement',
                    'ordering': ['id'],
                },
            ),
            migrations.CreateModel(
                name='LabelStudioAnnotation',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('ls_annotation_id', models.PositiveIntegerField(unique=True)),
                    ('ls_user_id', models.PositiveIntegerField(blank=True, null=True)),
                    ('ls_user_email', models.CharField(blank=True, max_length=254)),
                    ('result', models.JSONField(default=list)),
                    ('result_hash', models.CharField(max_length=64)),
                    ('was_cancelled', models.BooleanField(default=False)),
                    ('lead_time_s', models.FloatField(blank=True, null=True)),
                    ('answer', models.JSONField(blank=True, help_text='chosen option(s) of the QA item', null=True)),
                    ('texts', models.JSONField(blank=True, default=dict, help_text='question / rationale text areas')),
                    ('n_regions', models.PositiveIntegerField(default=0)),
                    ('n_rejected', models.PositiveIntegerField(default=0)),
                    ('status', models.CharField(choices=[('active', 'Active'), ('retired', 'Retired')], db_index=True, default='active', max_length=16)),
                    ('ls_created_at', models.DateTimeField(blank=True, null=True)),
                    ('ls_updated_at', models.DateTimeField(blank=True, null=True)),
                    ('revision', models.PositiveIntegerField(default=1, help_text='times its content changed in Label Studio')),
                    ('synced_at', models.DateTimeField(auto_now=True)),
                    ('author', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='annotations', to='labelstudio.annotationtask')),
                ],
                options={
                    'db_table': 'annotation_labelstudioannotation',
                    'ordering': ['id'],
                },
            ),
            migrations.CreateModel(
                name='SyncLogEntry',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('direction', models.CharField(choices=[('push', 'Push'), ('pull', 'Pull'), ('webhook', 'Webhook')], max_length=8)),
                    ('level', models.CharField(choices=[('info', 'Info'), ('warning', 'Warning'), ('error', 'Error')], db_index=True, max_length=8)),
                    ('code', models.CharField(max_length=40)),
                    ('message', models.TextField()),
                    ('ls_task_id', models.PositiveIntegerField(blank=True, null=True)),
                    ('ls_annotation_id', models.PositiveIntegerField(blank=True, null=True)),
                    ('detail', models.JSONField(blank=True, default=dict)),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('batch', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='sync_log', to='labelstudio.annotationbatch')),
                ],
                options={
                    'db_table': 'annotation_synclogentry',
                    'ordering': ['-id'],
                },
            ),
            migrations.AddIndex(
                model_name='annotationtask',
                index=models.Index(fields=['batch', 'status'], name='annotation__batch_i_a5cdd1_idx'),
            ),
            migrations.AddConstraint(
                model_name='annotationtask',
                constraint=models.UniqueConstraint(fields=('batch', 'image', 'qa_item'), name='ls_task_unique_content'),
            ),
            migrations.AddIndex(
                model_name='labelstudioannotation',
                index=models.Index(fields=['task', 'status'], name='annotation__task_id_634a69_idx'),
            ),
            migrations.AddIndex(
                model_name='synclogentry',
                index=models.Index(fields=['batch', 'level'], name='annotation__batch_i_a4d555_idx'),
            ),
        ]),
        migrations.RunPython(relabel_content_types(["annotationbatch", "annotationtask", "labelstudioannotation", "annotatordisagreement", "synclogentry", "webhookdelivery"], "annotation", "labelstudio"),
                             relabel_content_types(["annotationbatch", "annotationtask", "labelstudioannotation", "annotatordisagreement", "synclogentry", "webhookdelivery"], "labelstudio", "annotation")),
    ]
