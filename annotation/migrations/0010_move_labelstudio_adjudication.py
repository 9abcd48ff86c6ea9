"""Label Studio's and adjudication's models now belong to their own apps (labelstudio 0001,
adjudication 0001): drop them from this app's state. No table changes."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0009_validity_category_defaults'),
        ('labelstudio', '0001_initial'),
        ('adjudication', '0001_initial'),
        ('workers', '0004_move_prediction_rescore'),
    ]

    operations = [
        # the tables stay where they are (same names): only Django's idea of which app owns them moves
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.RemoveField(
                model_name='adjudicationcase',
                name='category',
            ),
            migrations.RemoveField(
                model_name='adjudicationcase',
                name='image',
            ),
            migrations.RemoveField(
                model_name='adjudicationcase',
                name='item',
            ),
            migrations.RemoveField(
                model_name='adjudicationcase',
                name='resolved_by',
            ),
            migrations.RemoveField(
                model_name='adjudicationcase',
                name='result_item',
            ),
            migrations.RemoveField(
                model_name='adjudicationcase',
                name='stage',
            ),
            migrations.RemoveField(
                model_name='casereading',
                name='case',
            ),
            migrations.RemoveField(
                model_name='annotationbatch',
                name='created_by',
            ),
            migrations.RemoveField(
                model_name='annotationbatch',
                name='readers',
            ),
            migrations.RemoveField(
                model_name='annotationtask',
                name='batch',
            ),
            migrations.RemoveField(
                model_name='synclogentry',
                name='batch',
            ),
            migrations.RemoveField(
                model_name='annotationtask',
                name='image',
            ),
            migrations.RemoveField(
                model_name='annotationtask',
                name='qa_item',
            ),
            migrations.RemoveField(
                model_name='labelstudioannotation',
                name='task',
            ),
            migrations.RemoveField(
                model_name='annotatordisagreement',
                name='task',
            ),
            migrations.RemoveField(
                model_name='annotatordisagreement',
                name='image',
            ),
            migrations.RemoveField(
                model_name='annotatordisagreement',
                name='qa_item',
            ),
            migrations.RemoveField(
                model_name='casereading',
                name='assigned_by',
            ),
            migrations.RemoveField(
                model_name='casereading',
                name='reader',
            ),
            migrations.RemoveField(
                model_name='labelstudioannotation',
                name='author',
            ),
            migrations.DeleteModel(
                name='WebhookDelivery',
            ),
            migrations.DeleteModel(
                name='AdjudicationCase',
            ),
            migrations.DeleteModel(
                name='AnnotationBatch',
            ),
            migrations.DeleteModel(
                name='SyncLogEntry',
            ),
            migrations.DeleteModel(
                name='AnnotationTask',
            ),
            migrations.DeleteModel(
                name='AnnotatorDisagreement',
            ),
            migrations.DeleteModel(
                name='CaseReading',
            ),
            migrations.DeleteModel(
                name='LabelStudioAnnotation',
            ),
        ]),
    ]
