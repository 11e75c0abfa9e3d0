#!/bin/sh
# wasm/js/bench_ratio.sh [pairs]: Node's do against Go's Do on PostgreSQL,
# new keys from 16 concurrent requests (issue 23 §4), alternated: each
# pair is one 5 s round of Go's BenchmarkDoNewKey/clients=16 then one 5 s
# round of node wasm/js/bench_do.mjs's PostgreSQL loop (after a second of
# warm-up each), so that both see the same machine. Prints each pair's
# ratio, then the median. IDEM_PG_DSN as for the tests.
set -eu
pairs=${1:-8}
cd "$(dirname "$0")/../.."
go test -c -o /tmp/idem_pgx_bench.test ./store/pgx/ >/dev/null
i=0
while [ "$i" -lt "$pairs" ]; do
	g=$(/tmp/idem_pgx_bench.test -test.run '^$' -test.bench 'BenchmarkDoNewKey/clients=16$' -test.benchtime 5s | awk '/req\/s/ { for (f = 1; f <= NF; f++) if ($(f+1) == "req/s") print $f }')
	n=$(IDEM_BENCH_PG_ROUNDS=1 IDEM_BENCH_PG_SECONDS=5 node wasm/js/bench_do.mjs | awk '/PostgreSQL/ { print $(NF-1) }')
	echo "pair $((i + 1)): go $g req/s, node $n req/s, ratio $(echo "$n $g" | awk '{ printf "%.2f", $1 / $2 }')"
	i=$((i + 1))
done | tee /tmp/idem_bench_ratio.txt
awk '{ r[NR] = $NF } END { n = asort(r); m = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2; printf "median ratio of %d pairs: %.2f\n", n, m }' /tmp/idem_bench_ratio.txt
