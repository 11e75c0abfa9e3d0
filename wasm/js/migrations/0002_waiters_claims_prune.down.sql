DROP INDEX IF EXISTS idem_records_prune_idx;
ALTER TABLE idem_records DROP COLUMN IF EXISTS waiters, DROP COLUMN IF EXISTS claimed_by;
COMMENT ON TABLE idem_records IS 'idem idempotency records; idem schema version 1';
