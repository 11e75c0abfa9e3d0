#!/usr/bin/env bash
# Issue 25 §3, research: what time partitioning would buy and cost, in raw
# SQL, before the driver offers it (BENCHMARKS.md, "store/pgx: time
# partitioning, research"). Two tables of ROWS records in a schema of their
# own (dropped at the end): u, the driver's layout (primary key on the
# scope, its partial indexes), and p, the same partitioned by day of
# creation (DAYS+1 partitions, primary key (scope, created_at)). The oldest
# day holds ROWS/DAYS tombstones past their retention, the other days
# completed records within their TTL. Then: lookups by scope and inserts of
# new keys on each (pgbench, CLIENTS clients, DUR seconds, alternated
# ROUNDS times), and the removal of the oldest day's tombstones: the
# driver's prune statement in batches of 1000 on u, a check and DETACH +
# DROP on p. Needs psql and pgbench; about 10 minutes at 10 M rows.
set -euo pipefail
cd "$(dirname "$0")"
DSN=${IDEM_PG_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
ROWS=${ROWS:-10000000} DAYS=${DAYS:-10} CLIENTS=${CLIENTS:-16} DUR=${DUR:-8} ROUNDS=${ROUNDS:-3}
SCHEMA=pr_$$_$(date +%s)
trap 'psql "$DSN" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null' EXIT
psql "$DSN" -q -v ON_ERROR_STOP=1 -v schema="$SCHEMA" -v rows="$ROWS" -v days="$DAYS" -f load.sql
bench() { # script table lo hi
  sed -e "s/@SCHEMA@/$SCHEMA/g" -e "s/@T@/$2/g" -e "s/@LO@/$3/g" -e "s/@HI@/$4/g" "$1" >"/tmp/$SCHEMA.$2.sql"
  pgbench -n -M prepared -T "$DUR" -c "$CLIENTS" -j 2 -f "/tmp/$SCHEMA.$2.sql" "$DSN" 2>&1 | awk '/^tps/ {printf "%.0f", $3}'
  rm -f "/tmp/$SCHEMA.$2.sql"
}
per_day=$((ROWS / DAYS))
for what in "lookup, any day:select.sql:$((per_day + 1)):$ROWS" "lookup, newest day, newest first:select_newest.sql:$((ROWS - per_day + 1)):$ROWS" "insert a new key:insert.sql:0:0"; do
  IFS=: read -r name script lo hi <<<"$what"
  for _ in $(seq "$ROUNDS"); do
    echo "$name: u $(bench "$script" u "$lo" "$hi") tps, p $(bench "$script" p "$lo" "$hi") tps"
  done
done
time psql "$DSN" -q -v ON_ERROR_STOP=1 -c "SET search_path = $SCHEMA" -f prune_u.sql
time psql "$DSN" -q -v ON_ERROR_STOP=1 -c "SET search_path = $SCHEMA" -f drop_p.sql
