"""Images of one DICOM series stored one file per slice share the series' (remapped) Series Instance
UID. Existing DICOM images get it from their stored, already de-identified source file (its header
only); an image whose source file is missing keeps '' and stays its own series, as before."""
import logging

from django.db import migrations, models

log = logging.getLogger(__name__)


def backfill(apps, schema_editor):
    import pydicom

    from annotation.ingest.dicom import series_position
    from annotation.storage import resolve

    Image = apps.get_model("annotation", "Image")
    pending = (Image.objects.using(schema_editor.connection.alias)
               .filter(source_format="dicom", series_uid="").exclude(source_file=""))
    by_file: dict[str, list[int]] = {}
    for pk, source_file in pending.values_list("pk", "source_file").iterator():
        by_file.setdefault(source_file, []).append(pk)
    missing = 0
    for source_file, pks in by_file.items():
        try:
            ds = pydicom.dcmread(resolve(source_file), stop_before_pixels=True, force=True)
        except Exception:  # noqa: BLE001 - a missing or unreadable file: the image stays its own series
            missing += 1
            continue
        uid = str(ds.get("SeriesInstanceUID", "") or "").strip()[:64]
        if uid:
            Image.objects.using(schema_editor.connection.alias).filter(pk__in=pks).update(
                series_uid=uid, series_position=series_position(ds))
    if missing:
        log.warning("series backfill: %d stored DICOM source file(s) could not be read; their images "
                    "stay their own series", missing)


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0012_groundingbox_provenance'),
    ]

    operations = [
        migrations.AddField(
            model_name='image',
            name='series_uid',
            field=models.CharField(blank=True, db_index=True, help_text="de-identified (remapped) DICOM Series Instance UID; '' without one", max_length=64),
        ),
        migrations.AddField(
            model_name='image',
            name='series_position',
            field=models.FloatField(blank=True, help_text='position along the slice normal (else Instance Number): the order of a one-file-per-slice series', null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
