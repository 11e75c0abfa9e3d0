\set n random(1, 2000000000)
BEGIN;
SELECT pg_advisory_xact_lock(hashtextextended(md5(:n::text) || :client_id, 0));
INSERT INTO @SCHEMA@.@T@ (tenant, principal, use_case, idem_key, status, fingerprint, token, version, created_at, updated_at, locked_until)
  VALUES ('', 'm' || :client_id, 'payments.create', md5(:n::text) || random(), 'in_progress', decode(repeat('ab', 32), 'hex'), :n, 1, now(), now(), now() + interval '5 minutes');
COMMIT;
