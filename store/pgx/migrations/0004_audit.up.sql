-- Version 4: the audit trail of the records an operator settled by hand
-- (store.Auditor, cmd/idemctl resolve): who, why, what the core decided,
-- at the database's time. A row is written in the transaction of the
-- event's write, so that it exists exactly when the write does, and it
-- outlives the record (a pruned key keeps the trail of its earlier
-- records). Nothing on a request's path reads or writes it.
CREATE TABLE idem_records_audit (
  id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant    text NOT NULL,
  principal text NOT NULL,
  use_case  text NOT NULL,
  idem_key  text NOT NULL,
  at        timestamptz NOT NULL,
  who       text NOT NULL,
  why       text NOT NULL,
  event     text NOT NULL,
  verdict   text NOT NULL,
  decision  text NOT NULL,
  token     bigint NOT NULL,
  version   bigint NOT NULL
);
CREATE INDEX idem_records_audit_scope ON idem_records_audit (tenant, principal, use_case, idem_key, id);

COMMENT ON TABLE idem_records IS 'idem idempotency records; idem schema version 4';
