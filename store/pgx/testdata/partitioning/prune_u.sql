
DO $$ DECLARE k int; total int := 0; BEGIN
LOOP
  WITH pick AS (SELECT tenant, principal, use_case, idem_key FROM u WHERE status = 'expired' AND expires_at <= statement_timestamp()
      ORDER BY expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED),
    del AS (DELETE FROM u AS r USING pick WHERE (r.tenant, r.principal, r.use_case, r.idem_key) = (pick.tenant, pick.principal, pick.use_case, pick.idem_key) RETURNING r.*)
  SELECT count(*) INTO k FROM del;
  total := total + k;
  COMMIT;
  EXIT WHEN k < 1000;
END LOOP;
RAISE NOTICE 'pruned %', total;
END $$;
