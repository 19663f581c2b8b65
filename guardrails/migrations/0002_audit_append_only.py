"""On PostgreSQL the database itself refuses UPDATE, DELETE and TRUNCATE of audit events.

The trigger stops every application path (ORM, raw SQL, admin). The first version of this
function had a session-setting escape for TRUNCATE; it has been removed here and migration 0005
replaces the function on databases that ran the old one. For protection against a hostile
database user, run the application as a role that does not own the table (README "Audit
trail").
"""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION guardrails_audit_refuse() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER guardrails_auditevent_append_only
    BEFORE UPDATE OR DELETE ON guardrails_auditevent
    FOR EACH ROW EXECUTE FUNCTION guardrails_audit_refuse();

CREATE TRIGGER guardrails_auditevent_no_truncate
    BEFORE TRUNCATE ON guardrails_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION guardrails_audit_refuse();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS guardrails_auditevent_append_only ON guardrails_auditevent;
DROP TRIGGER IF EXISTS guardrails_auditevent_no_truncate ON guardrails_auditevent;
DROP FUNCTION IF EXISTS guardrails_audit_refuse();
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD, params=None)


class Migration(migrations.Migration):
    dependencies = [("guardrails", "0001_initial")]

    operations = [migrations.RunPython(forward, backward)]
