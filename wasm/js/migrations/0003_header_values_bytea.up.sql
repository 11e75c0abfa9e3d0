-- Version 3: header values byte for byte. RFC 9110 lets a field value hold
-- obs-text (bytes 0x80..0xFF), which the core accepts, and a Go string may
-- hold any bytes; text refuses what is not valid in the database's encoding
-- (SQLSTATE 22021), so an outcome the core accepted could not be recorded.
-- Header values become bytea[]. Every other text column holds only what the
-- core's alphabets allow, which text keeps as it is: header names are RFC
-- 9110 tokens and error codes token characters (ASCII), the key printable
-- ASCII, the other scope parts UTF-8 without control characters, the
-- status one of five names.
--
-- Existing rows keep their values: each becomes the bytes the driver sent
-- and read back. pgx speaks UTF-8, so that is the text in UTF-8, except in
-- a SQL_ASCII database, which converts nothing and may hold any bytes: there
-- it is the bytes as stored. ALTER ... USING takes no subquery, so a
-- function of this session converts each array.
CREATE FUNCTION pg_temp.idem_text_to_bytes(v text[]) RETURNS bytea[] LANGUAGE sql STABLE STRICT AS $$
  SELECT COALESCE(array_agg(convert_to(e, CASE current_setting('server_encoding') WHEN 'SQL_ASCII' THEN 'SQL_ASCII' ELSE 'UTF8' END)
    ORDER BY i), '{}') FROM unnest(v) WITH ORDINALITY AS u(e, i)
$$;

-- The functions return the column's type: recreated below.
DROP FUNCTION idem_records_load(text, text, text, text);
DROP FUNCTION idem_records_reserve(text, text, text, text, text, bytea, bigint, bigint, integer, text[], text[], bytea, bigint, text, interval, timestamptz, interval, timestamptz, interval, timestamptz, interval, timestamptz, interval, timestamptz, bigint, text, text);

ALTER TABLE idem_records
  ALTER COLUMN response_header_values DROP DEFAULT,
  ALTER COLUMN response_header_values TYPE bytea[] USING pg_temp.idem_text_to_bytes(response_header_values),
  ALTER COLUMN response_header_values SET DEFAULT '{}',
  -- A NULL element would load as an empty value: refuse it.
  ADD CONSTRAINT idem_records_header_values_check CHECK (array_position(response_header_values, NULL) IS NULL);
DROP FUNCTION pg_temp.idem_text_to_bytes(text[]);

COMMENT ON COLUMN idem_records.response_header_values IS 'stored response: header values, one per name, as bytes (obs-text is not UTF-8)';

-- As in version 1, with bytea[] header values (see 0001 for why the lock).
CREATE FUNCTION idem_records_load(p_tenant text, p_principal text, p_use_case text, p_key text)
RETURNS TABLE (now timestamptz, tok bigint, status text, fingerprint bytea, token bigint, version bigint,
  response_status integer, response_header_names text[], response_header_values bytea[], response_body bytea,
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

CREATE FUNCTION idem_records_reserve(p_tenant text, p_principal text, p_use_case text, p_key text,
  p_status text, p_fingerprint bytea, p_token bigint, p_version bigint, p_response_status integer,
  p_header_names text[], p_header_values bytea[], p_body bytea, p_schema_version bigint, p_last_error text,
  p_locked_off interval, p_locked_lit timestamptz, p_reconcile_off interval, p_reconcile_lit timestamptz,
  p_created_off interval, p_created_lit timestamptz, p_completed_off interval, p_completed_lit timestamptz,
  p_expires_off interval, p_expires_lit timestamptz, p_attempts bigint, p_channel text, p_payload text)
RETURNS TABLE (inserted boolean, now timestamptz, tok bigint, status text, fingerprint bytea, token bigint, version bigint,
  response_status integer, response_header_names text[], response_header_values bytea[], response_body bytea,
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
COMMENT ON FUNCTION idem_records_reserve(text, text, text, text, text, bytea, bigint, bigint, integer, text[], bytea[], bytea, bigint, text, interval, timestamptz, interval, timestamptz, interval, timestamptz, interval, timestamptz, interval, timestamptz, bigint, text, text) IS 'idem: insert a new record, or read the existing one, with the clock and a fresh token';

COMMENT ON TABLE idem_records IS 'idem idempotency records; idem schema version 3';
