-- Version 2: NOTIFY only when a waiter may care, claims per instance, and an
-- index for pruning tombstones in batches.
ALTER TABLE idem_records
  ADD COLUMN waiters boolean NOT NULL DEFAULT false,
  ADD COLUMN claimed_by bigint;

COMMENT ON COLUMN idem_records.waiters IS 'a Wait marked the row since its last write: the next write (or delete) notifies and clears it; not part of the record';
COMMENT ON COLUMN idem_records.claimed_by IS 'the Store instance whose Due claimed the row until claimed_until (its own Due still lists it); not part of the record';

-- Prune: tombstones (expired records) past their retention, oldest first.
CREATE INDEX idem_records_prune_idx ON idem_records (expires_at) WHERE status = 'expired';

COMMENT ON TABLE idem_records IS 'idem idempotency records; idem schema version 2';
