"""On PostgreSQL, make the audit table append-only at the database level.

UPDATE and DELETE raise. (TRUNCATE needs table ownership; the production database role the
app uses should not own the table — see docs/deploy.md.) SQLite, used only by the local demo,
gets a pair of equivalent triggers.
"""
from django.db import migrations

PG_FORWARD = """
CREATE OR REPLACE FUNCTION medr2_audit_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit_auditevent is append-only: % rejected', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS audit_auditevent_append_only ON audit_auditevent;
CREATE TRIGGER audit_auditevent_append_only
    BEFORE UPDATE OR DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION medr2_audit_append_only();
"""
PG_BACKWARD = """
DROP TRIGGER IF EXISTS audit_auditevent_append_only ON audit_auditevent;
DROP FUNCTION IF EXISTS medr2_audit_append_only();
"""
SQLITE_FORWARD = [
    """CREATE TRIGGER IF NOT EXISTS audit_auditevent_no_update BEFORE UPDATE ON audit_auditevent
       BEGIN SELECT RAISE(ABORT, 'audit_auditevent is append-only: UPDATE rejected'); END;""",
    """CREATE TRIGGER IF NOT EXISTS audit_auditevent_no_delete BEFORE DELETE ON audit_auditevent
       BEGIN SELECT RAISE(ABORT, 'audit_auditevent is append-only: DELETE rejected'); END;""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS audit_auditevent_no_update;",
    "DROP TRIGGER IF EXISTS audit_auditevent_no_delete;",
]


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FORWARD, params=None)
    elif vendor == "sqlite":
        for sql in SQLITE_FORWARD:
            schema_editor.execute(sql)


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_BACKWARD, params=None)
    elif vendor == "sqlite":
        for sql in SQLITE_BACKWARD:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]
    operations = [migrations.RunPython(forward, backward)]
