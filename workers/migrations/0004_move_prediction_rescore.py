"""The rescore history (`PredictionRescore`) now belongs to adjudication (adjudication 0001). No table changes."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('workers', '0003_run_split_prediction_box'),
        ('adjudication', '0001_initial'),
    ]

    operations = [
        # the tables stay where they are (same names): only Django's idea of which app owns them moves
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.DeleteModel(
                name='PredictionRescore',
            ),
        ]),
    ]
