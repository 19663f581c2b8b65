"""The audit chain gets a key, a sealed head and a verified checkpoint; the trigger loses its
escape hatch.

1. The trigger function refuses UPDATE, DELETE and TRUNCATE with no exception at all: the
   session setting that once let TRUNCATE through is gone, so no role can switch it on. (The
   test suite flushes by disabling the TRUNCATE trigger on its throw-away database as the
   table's owner.) Going backwards keeps the strict function.
2. Events get `key_id`: from now on each hash is HMAC-SHA256 under the audit key. Nothing is
   re-keyed: existing events keep their plain SHA-256 hashes and an empty `key_id`.
3. Each existing head records how far its plain SHA-256 entries go (`legacy_seq`) and is sealed
   with the audit key, so later entries cannot be downgraded to plain SHA-256 by anyone
   without the key.
"""

from django.db import migrations, models

STRICT_FUNCTION = """
CREATE OR REPLACE FUNCTION guardrails_audit_refuse() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$ LANGUAGE plpgsql;
"""


def strict_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(STRICT_FUNCTION, params=None)


def seal_heads(apps, schema_editor):
    # The key comes from the settings of the process running the migration (never the
    # database); the pure functions are the ones the application verifies with.
    from guardrails.chain import head_mac
    from guardrails.keys import audit_key

    key = audit_key()
    heads = apps.get_model("guardrails", "AuditChainHead").objects.using(
        schema_editor.connection.alias
    )
    for head in heads.all():
        head.legacy_seq = head.seq
        head.mac = head_mac(
            key, chain=head.chain, seq=head.seq, last_hash=head.last_hash, legacy_seq=head.seq
        )
        head.save(update_fields=["legacy_seq", "mac"])


class Migration(migrations.Migration):
    dependencies = [("guardrails", "0004_approval_executing")]

    operations = [
        migrations.RunPython(strict_trigger, migrations.RunPython.noop),
        migrations.CreateModel(
            name="AuditVerification",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("chain", models.CharField(max_length=64, unique=True)),
                ("seq", models.PositiveBigIntegerField()),
                ("hash", models.CharField(max_length=64)),
                ("mac", models.CharField(max_length=64)),
                ("verified_at", models.DateTimeField()),
            ],
        ),
        migrations.AddField(
            model_name="auditchainhead",
            name="legacy_seq",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="auditchainhead",
            name="mac",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="key_id",
            field=models.CharField(blank=True, default="", max_length=16),
        ),
        migrations.RunPython(seal_heads, migrations.RunPython.noop),
    ]
