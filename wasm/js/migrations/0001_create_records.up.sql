-- idem records (store/pgx). Names: the table idem_records and its sequence
-- idem_records_token_seq, in the schema first on search_path. pgxstore.Migrate
-- runs this file with its own names; another migration tool runs it as is.
CREATE SEQUENCE idem_records_token_seq AS bigint MINVALUE 1 NO CYCLE;
COMMENT ON SEQUENCE idem_records_token_seq IS 'idem fencing tokens: never reset, never cycled (tokens must never repeat for a scope); values lost to rollbacks or unused loads are gaps, which are harmless';

CREATE TABLE idem_records (
  tenant                  text        NOT NULL,
  principal               text        NOT NULL,
  use_case                text        NOT NULL,
  idem_key                text        NOT NULL,
  status                  text        NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed_retryable', 'unknown', 'expired')),
  fingerprint             bytea       NOT NULL CHECK (octet_length(fingerprint) = 32),
  token                   bigint      NOT NULL CHECK (token > 0),
  version                 bigint      NOT NULL CHECK (version > 0),
  response_status         integer     NOT NULL DEFAULT 0,
  response_header_names   text[]      NOT NULL DEFAULT '{}',
  response_header_values  text[]      NOT NULL DEFAULT '{}',
  response_body           bytea,
  response_schema_version bigint      NOT NULL DEFAULT 0,
  last_error_code         text        NOT NULL DEFAULT '',
  locked_until            timestamptz,
  reconcile_after         timestamptz,
  reconcile_attempts      bigint      NOT NULL DEFAULT 0,
  created_at              timestamptz NOT NULL,
  updated_at              timestamptz NOT NULL,
  completed_at            timestamptz,
  expires_at              timestamptz,
  claimed_until           timestamptz,
  PRIMARY KEY (tenant, principal, use_case, idem_key),
  CHECK (cardinality(response_header_names) = cardinality(response_header_values))
);

COMMENT ON TABLE idem_records IS 'idem idempotency records; idem schema version 1';
COMMENT ON COLUMN idem_records.tenant IS 'scope: tenant (may be empty)';
COMMENT ON COLUMN idem_records.principal IS 'scope: the authenticated caller';
COMMENT ON COLUMN idem_records.use_case IS 'scope: the operation (e.g. create_payment)';
COMMENT ON COLUMN idem_records.idem_key IS 'scope: the client''s Idempotency-Key';
COMMENT ON COLUMN idem_records.status IS 'lifecycle status (core.Status); absent records are not stored';
COMMENT ON COLUMN idem_records.fingerprint IS 'SHA-256 of the semantic request fields (exactly 32 bytes)';
COMMENT ON COLUMN idem_records.token IS 'fencing token of the current or last attempt, from the table''s token sequence';
COMMENT ON COLUMN idem_records.version IS 'bumped by every write; with token, the compare-and-set precondition';
COMMENT ON COLUMN idem_records.response_status IS 'stored response: HTTP status (0: none)';
COMMENT ON COLUMN idem_records.response_header_names IS 'stored response: header names, in the caller''s order';
COMMENT ON COLUMN idem_records.response_header_values IS 'stored response: header values, one per name';
COMMENT ON COLUMN idem_records.response_body IS 'stored response: body bytes (NULL: none)';
COMMENT ON COLUMN idem_records.response_schema_version IS 'stored response: the caller''s version of the body format';
COMMENT ON COLUMN idem_records.last_error_code IS 'why the record is failed_retryable or unknown';
COMMENT ON COLUMN idem_records.locked_until IS 'end of the execution lease (database clock)';
COMMENT ON COLUMN idem_records.reconcile_after IS 'when the reconciler looks at an unknown record next (NULL: not scheduled)';
COMMENT ON COLUMN idem_records.reconcile_attempts IS 'still-unknown answers the reconciler gave';
COMMENT ON COLUMN idem_records.created_at IS 'start of this incarnation of the key (database clock)';
COMMENT ON COLUMN idem_records.updated_at IS 'time of the last write (database clock); not part of the record';
COMMENT ON COLUMN idem_records.completed_at IS 'when the outcome was stored';
COMMENT ON COLUMN idem_records.expires_at IS 'TTL end of a completed or failed record; prune time of an expired one';
COMMENT ON COLUMN idem_records.claimed_until IS 'a worker''s short claim from Due, so that many sweepers work on disjoint records; not part of the record';

-- Due(sweep): leases that ran out, and records past their TTL or retention.
CREATE INDEX idem_records_sweep_lease_idx ON idem_records (locked_until) WHERE status = 'in_progress';
CREATE INDEX idem_records_sweep_expiry_idx ON idem_records (expires_at) WHERE status IN ('completed', 'failed_retryable', 'expired');
-- Due(reconcile): unknown records with a scheduled look.
CREATE INDEX idem_records_reconcile_idx ON idem_records (reconcile_after) WHERE status = 'unknown' AND reconcile_after IS NOT NULL;

-- Loads and reserves run in these functions, so that a scope's fresh token
-- and the snapshot it is handed out with come in the same order: the
-- function first takes a transaction-level advisory lock on the scope (held
-- to the end of the caller's statement), then reads the clock and the
-- sequence, and only then reads the record, in a statement of its own
-- (a volatile SQL function takes a new snapshot per statement). Without
-- the lock a load could take an older snapshot but a newer token than
-- another load of the scope. The lock key is a 64-bit hash of the scope; a
-- collision (with another scope, or an application's own advisory locks)
-- only makes one wait for the other.
CREATE FUNCTION idem_records_load(p_tenant text, p_principal text, p_use_case text, p_key text)
RETURNS TABLE (now timestamptz, tok bigint, status text, fingerprint bytea, token bigint, version bigint,
  response_status integer, response_header_names text[], response_header_values text[], response_body bytea,
  response_schema_version bigint, last_error_code text, locked_until timestamptz, reconcile_after timestamptz,
  reconcile_attempts bigint, created_at timestamptz, completed_at timestamptz, expires_at timestamptz)
LANGUAGE sql VOLATILE SET search_path FROM CURRENT AS $$
  SELECT pg_advisory_xact_lock(hashtextextended(p_key, hashtextextended(p_use_case, hashtextextended(p_principal, hashtextextended(p_tenant, 0)))));
  SELECT clock_timestamp(), nextval('idem_records_token_seq'), r.status, r.fingerprint, r.token, r.version,
    r.response_status, r.response_header_names, r.response_header_values, r.response_body,
    r.response_schema_version, r.last_error_code, r.locked_until, r.reconcile_after,
    r.reconcile_attempts, r.created_at, r.completed_at, r.expires_at
  FROM (SELECT 1) AS one LEFT JOIN idem_records AS r
    ON r.tenant = p_tenant AND r.principal = p_principal AND r.use_case = p_use_case AND r.idem_key = p_key;
$$;
COMMENT ON FUNCTION idem_records_load(text, text, text, text) IS 'idem: the record of a scope, the database clock and a fresh token, in one consistent read';

-- Reserve in one round trip: insert the record the caller computed (times
-- as offsets from the clock, or literals; the token from the sequence unless
-- given), or, if the scope has one, return it with the clock and a fresh
-- token. inserted says which. No row: another writer inserted meanwhile
-- without this lock; the caller loads again.
CREATE FUNCTION idem_records_reserve(p_tenant text, p_principal text, p_use_case text, p_key text,
  p_status text, p_fingerprint bytea, p_token bigint, p_version bigint, p_response_status integer,
  p_header_names text[], p_header_values text[], p_body bytea, p_schema_version bigint, p_last_error text,
  p_locked_off interval, p_locked_lit timestamptz, p_reconcile_off interval, p_reconcile_lit timestamptz,
  p_created_off interval, p_created_lit timestamptz, p_completed_off interval, p_completed_lit timestamptz,
  p_expires_off interval, p_expires_lit timestamptz, p_attempts bigint, p_channel text, p_payload text)
RETURNS TABLE (inserted boolean, now timestamptz, tok bigint, status text, fingerprint bytea, token bigint, version bigint,
  response_status integer, response_header_names text[], response_header_values text[], response_body bytea,
  response_schema_version bigint, last_error_code text, locked_until timestamptz, reconcile_after timestamptz,
  reconcile_attempts bigint, created_at timestamptz, completed_at timestamptz, expires_at timestamptz)
LANGUAGE sql VOLATILE SET search_path FROM CURRENT AS $$
  SELECT pg_advisory_xact_lock(hashtextextended(p_key, hashtextextended(p_use_case, hashtextextended(p_principal, hashtextextended(p_tenant, 0)))));
  WITH c AS (SELECT clock_timestamp() AS now, nextval('idem_records_token_seq') AS tok),
  ins AS (
    INSERT INTO idem_records (tenant, principal, use_case, idem_key, status, fingerprint, token, version,
      response_status, response_header_names, response_header_values, response_body, response_schema_version,
      last_error_code, locked_until, reconcile_after, reconcile_attempts, created_at, completed_at, expires_at, updated_at)
    SELECT p_tenant, p_principal, p_use_case, p_key, p_status, p_fingerprint, COALESCE(p_token, c.tok), p_version,
      p_response_status, p_header_names, p_header_values, p_body, p_schema_version, p_last_error,
      COALESCE(c.now + p_locked_off, p_locked_lit), COALESCE(c.now + p_reconcile_off, p_reconcile_lit), p_attempts,
      COALESCE(c.now + p_created_off, p_created_lit), COALESCE(c.now + p_completed_off, p_completed_lit),
      COALESCE(c.now + p_expires_off, p_expires_lit), c.now
    FROM c
    ON CONFLICT DO NOTHING
    RETURNING *)
  SELECT true, c.now, c.tok, ins.status, ins.fingerprint, ins.token, ins.version, ins.response_status,
    ins.response_header_names, ins.response_header_values, ins.response_body, ins.response_schema_version,
    ins.last_error_code, ins.locked_until, ins.reconcile_after, ins.reconcile_attempts, ins.created_at,
    ins.completed_at, ins.expires_at
  FROM c, ins, LATERAL (SELECT pg_notify(p_channel, p_payload)) AS n
  UNION ALL
  SELECT false, c.now, c.tok, r.status, r.fingerprint, r.token, r.version, r.response_status,
    r.response_header_names, r.response_header_values, r.response_body, r.response_schema_version,
    r.last_error_code, r.locked_until, r.reconcile_after, r.reconcile_attempts, r.created_at,
    r.completed_at, r.expires_at
  FROM c, idem_records AS r
  WHERE r.tenant = p_tenant AND r.principal = p_principal AND r.use_case = p_use_case AND r.idem_key = p_key
    AND NOT EXISTS (SELECT FROM ins);
$$;
COMMENT ON FUNCTION idem_records_reserve(text, text, text, text, text, bytea, bigint, bigint, integer, text[], text[], bytea, bigint, text, interval, timestamptz, interval, timestamptz, interval, timestamptz, interval, timestamptz, interval, timestamptz, bigint, text, text) IS 'idem: insert a new record, or read the existing one, with the clock and a fresh token';
