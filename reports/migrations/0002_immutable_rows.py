"""What the database itself refuses, whatever code runs (docs/reports.md, "Immutability"):

- `reports_acceptancecriteria` and `reports_reportsignature`: every UPDATE and DELETE (a change of the
  criteria is a new row; a signature is never edited or removed);
- `reports_reportversion` and `reports_reportsignedcopy`: UPDATE and DELETE of a row that is `ready` or
  `failed` (a row still `generating` takes its progress and, once, its files).

PostgreSQL gets triggers like the audit trail's (audit/migrations/0002); SQLite (the demo) equivalent ones.
As there, the production app role should not own these tables, so it cannot drop the triggers.
"""
from django.db import migrations

APPEND_ONLY = ("reports_acceptancecriteria", "reports_reportsignature")
FINAL_ONCE_BUILT = ("reports_reportversion", "reports_reportsignedcopy")

PG_FUNCTIONS = """
CREATE OR REPLACE FUNCTION medr2_reports_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % rejected', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION medr2_reports_final_once_built() RETURNS trigger AS $$
BEGIN
    IF OLD.status IN ('ready', 'failed') THEN
        RAISE EXCEPTION '% row % is %: it never changes (% rejected)', TG_TABLE_NAME, OLD.id, OLD.status, TG_OP
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""
PG_TRIGGER = """
DROP TRIGGER IF EXISTS {table}_immutable ON {table};
CREATE TRIGGER {table}_immutable
    BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION {function}();
"""
SQLITE_APPEND_ONLY = [
    """CREATE TRIGGER IF NOT EXISTS {table}_no_update BEFORE UPDATE ON {table}
       BEGIN SELECT RAISE(ABORT, '{table} is append-only: UPDATE rejected'); END;""",
    """CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON {table}
       BEGIN SELECT RAISE(ABORT, '{table} is append-only: DELETE rejected'); END;""",
]
SQLITE_FINAL = [
    """CREATE TRIGGER IF NOT EXISTS {table}_no_update BEFORE UPDATE ON {table}
       WHEN OLD.status IN ('ready', 'failed')
       BEGIN SELECT RAISE(ABORT, '{table}: a ready or failed row never changes (UPDATE rejected)'); END;""",
    """CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON {table}
       WHEN OLD.status IN ('ready', 'failed')
       BEGIN SELECT RAISE(ABORT, '{table}: a ready or failed row never changes (DELETE rejected)'); END;""",
]
TABLES = (*APPEND_ONLY, *FINAL_ONCE_BUILT)


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FUNCTIONS, params=None)
        for table in APPEND_ONLY:
            schema_editor.execute(PG_TRIGGER.format(table=table, function="medr2_reports_append_only"), params=None)
        for table in FINAL_ONCE_BUILT:
            schema_editor.execute(PG_TRIGGER.format(table=table, function="medr2_reports_final_once_built"),
                                  params=None)
    elif vendor == "sqlite":
        for tables, statements in ((APPEND_ONLY, SQLITE_APPEND_ONLY), (FINAL_ONCE_BUILT, SQLITE_FINAL)):
            for table in tables:
                for sql in statements:
                    schema_editor.execute(sql.format(table=table))


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        for table in TABLES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable ON {table};", params=None)
        schema_editor.execute("DROP FUNCTION IF EXISTS medr2_reports_append_only();", params=None)
        schema_editor.execute("DROP FUNCTION IF EXISTS medr2_reports_final_once_built();", params=None)
    elif vendor == "sqlite":
        for table in TABLES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_no_update;")
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_no_delete;")


class Migration(migrations.Migration):
    dependencies = [("reports", "0001_initial")]
    operations = [migrations.RunPython(forward, backward)]
