"""Reference runs: only a run a curator marked as reference opens or re-prioritises adjudication cases."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('workers', '0005_modelendpoint_lineage'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='evaluationrun',
            name='is_reference',
            field=models.BooleanField(db_index=True, default=False, help_text="a curator's choice: this run's models feed the adjudication queue"),
        ),
        migrations.AddField(
            model_name='evaluationrun',
            name='reference_set_by',
            field=models.ForeignKey(blank=True, help_text='who last marked or unmarked it', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='evaluationrun',
            name='reference_set_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='evaluationrun',
            name='reference_reason',
            field=models.CharField(blank=True, max_length=500),
        ),
    ]
