"""Make the touched-object rows and the checkpoints append-only, like the events (0002).

On PostgreSQL a trigger rejects every UPDATE and DELETE on `audit_auditeventobject` and
`audit_auditcheckpoint`; SQLite (the demo) gets equivalent triggers. The production app role should
also lose UPDATE/DELETE/TRUNCATE on both tables (docs/deploy.md, "Audit trail").
"""
from django.db import migrations

TABLES = ("audit_auditeventobject", "audit_auditcheckpoint")

PG_FUNCTION = """
CREATE OR REPLACE FUNCTION medr2_audit_rows_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % rejected', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""
PG_TRIGGER = """
DROP TRIGGER IF EXISTS {table}_append_only ON {table};
CREATE TRIGGER {table}_append_only
    BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION medr2_audit_rows_append_only();
"""
SQLITE_TRIGGERS = [
    """CREATE TRIGGER IF NOT EXISTS {table}_no_update BEFORE UPDATE ON {table}
       BEGIN SELECT RAISE(ABORT, '{table} is append-only: UPDATE rejected'); END;""",
    """CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON {table}
       BEGIN SELECT RAISE(ABORT, '{table} is append-only: DELETE rejected'); END;""",
]


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FUNCTION, params=None)
        for table in TABLES:
            schema_editor.execute(PG_TRIGGER.format(table=table), params=None)
    elif vendor == "sqlite":
        for table in TABLES:
            for sql in SQLITE_TRIGGERS:
                schema_editor.execute(sql.format(table=table))


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        for table in TABLES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};", params=None)
        schema_editor.execute("DROP FUNCTION IF EXISTS medr2_audit_rows_append_only();", params=None)
    elif vendor == "sqlite":
        for table in TABLES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_no_update;")
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_no_delete;")


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_event_objects_and_checkpoints")]
    operations = [migrations.RunPython(forward, backward)]
