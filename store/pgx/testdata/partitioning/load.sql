-- run.sh's tables (psql variables: schema, rows, days). Day 0, the oldest,
-- holds rows/days tombstones past their retention; days 1 to days-1
-- completed records within their TTL; the partitioned table has one more
-- partition, for today.
CREATE SCHEMA :"schema";
SET search_path = :"schema";
\set per_day (:rows / :days)
CREATE TABLE u (
  tenant text NOT NULL, principal text NOT NULL, use_case text NOT NULL, idem_key text NOT NULL,
  status text NOT NULL, fingerprint bytea NOT NULL, token bigint NOT NULL, version bigint NOT NULL,
  response_status integer NOT NULL DEFAULT 0, response_header_names text[] NOT NULL DEFAULT '{}',
  response_header_values bytea[] NOT NULL DEFAULT '{}', response_body bytea, response_schema_version bigint NOT NULL DEFAULT 0,
  last_error_code text NOT NULL DEFAULT '', locked_until timestamptz, reconcile_after timestamptz,
  reconcile_attempts bigint NOT NULL DEFAULT 0, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
  completed_at timestamptz, expires_at timestamptz, claimed_until timestamptz, waiters boolean NOT NULL DEFAULT false, claimed_by bigint,
  PRIMARY KEY (tenant, principal, use_case, idem_key));
CREATE TABLE p (LIKE u INCLUDING DEFAULTS) PARTITION BY RANGE (created_at);
ALTER TABLE p ADD PRIMARY KEY (tenant, principal, use_case, idem_key, created_at);
SELECT format('CREATE TABLE p_%s PARTITION OF p FOR VALUES FROM (%L) TO (%L)', d,
    date_trunc('day', now()) - make_interval(days => :days - d), date_trunc('day', now()) - make_interval(days => :days - 1 - d))
  FROM generate_series(0, :days) AS d \gexec
INSERT INTO u SELECT '', 'merchant_' || (n % 1000), 'payments.create', md5(n::text),
  CASE WHEN n <= :per_day THEN 'expired' ELSE 'completed' END, decode(repeat('ab', 32), 'hex'), n, 2,
  CASE WHEN n <= :per_day THEN 0 ELSE 201 END, '{}', '{}',
  CASE WHEN n <= :per_day THEN NULL ELSE '{"paymentId":"p_1","status":"created"}'::bytea END, 0, '', NULL, NULL, 0,
  date_trunc('day', now()) - make_interval(days => :days - (n - 1) / :per_day) + make_interval(secs => (n % 80000)),
  now(), now(), CASE WHEN n <= :per_day THEN now() - interval '1 hour' ELSE now() + interval '1 day' END, NULL, false, NULL
FROM generate_series(1, :rows) AS n;
INSERT INTO p SELECT * FROM u;
CREATE INDEX ON u (locked_until) WHERE status = 'in_progress';
CREATE INDEX ON u (expires_at) WHERE status IN ('completed', 'failed_retryable', 'expired');
CREATE INDEX ON u (reconcile_after) WHERE status = 'unknown' AND reconcile_after IS NOT NULL;
CREATE INDEX ON u (expires_at) WHERE status = 'expired';
CREATE INDEX ON p (locked_until) WHERE status = 'in_progress';
CREATE INDEX ON p (expires_at) WHERE status IN ('completed', 'failed_retryable', 'expired');
CREATE INDEX ON p (reconcile_after) WHERE status = 'unknown' AND reconcile_after IS NOT NULL;
CREATE INDEX ON p (expires_at) WHERE status = 'expired';
VACUUM ANALYZE u;
VACUUM ANALYZE p;
