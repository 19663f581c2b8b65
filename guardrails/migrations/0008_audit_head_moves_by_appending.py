"""A chain head moves only the way an append moves it.

The application's role must UPDATE the head (every append advances it), so a grant cannot tell
an append from a rewind. This trigger can: on PostgreSQL a head may only move forward onto an
event that exists and chains from the head it replaces; `chain` and `legacy_seq` never change.
Re-sealing in place (same seq and hash, another MAC) stays possible: without the audit key it
can only make the head fail verification, which is what the verifier reports.

The table's owner can still disable the trigger; the sealed MAC is what catches that.
"""

from django.db import migrations

GUARD = """
CREATE OR REPLACE FUNCTION guardrails_audit_head_guard() RETURNS trigger AS $$
BEGIN
    IF NEW.chain IS DISTINCT FROM OLD.chain OR NEW.legacy_seq IS DISTINCT FROM OLD.legacy_seq THEN
        RAISE EXCEPTION 'audit chain heads keep their chain and legacy range'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.seq = OLD.seq AND NEW.last_hash = OLD.last_hash THEN
        RETURN NEW;
    END IF;
    IF NEW.seq > OLD.seq AND EXISTS (
        SELECT 1 FROM guardrails_auditevent e
        WHERE e.chain = NEW.chain AND e.seq = NEW.seq
          AND e.hash = NEW.last_hash AND e.prev_hash = OLD.last_hash
    ) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit chain heads only move forward onto an appended event (chain %, #% -> #%)',
        OLD.chain, OLD.seq, NEW.seq
        USING ERRCODE = 'insufficient_privilege';
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER guardrails_auditchainhead_append_only
    BEFORE UPDATE ON guardrails_auditchainhead
    FOR EACH ROW EXECUTE FUNCTION guardrails_audit_head_guard();
"""

DROP = """
DROP TRIGGER IF EXISTS guardrails_auditchainhead_append_only ON guardrails_auditchainhead;
DROP FUNCTION IF EXISTS guardrails_audit_head_guard();
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(GUARD, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("guardrails", "0007_approval_requester_agent")]

    operations = [migrations.RunPython(forward, backward)]
