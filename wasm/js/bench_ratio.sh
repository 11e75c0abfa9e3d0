#!/bin/sh
# wasm/js/bench_ratio.sh [pairs]: Node's do against Go's Do on PostgreSQL,
# new keys from 16 concurrent requests (issue 23 §4), alternated: each
# pair is one 5 s round of Go's BenchmarkDoNewKey/clients=16 then one 5 s
# round of node wasm/js/bench_do.mjs's PostgreSQL loop (after a second of
# warm-up each), so that both see the same machine. Prints each pair's
# ratio, then the median. IDEM_PG_DSN as for the tests.
#
# IDEM_BENCH_BASE=DIR: also a round of DIR's wasm/js/bench_do.mjs in each
# pair, beside this tree's, each going first in turn (DIR a checkout of
# older code, e.g. `git worktree add /tmp/nodebase HEAD` before a change,
# with its own `npm ci`): each pair's two ratios, and both medians, from
# the same run.
# IDEM_BENCH_GO_TEST=FILE: Go's side from that test binary (`go test -c
# ./store/pgx/` of the commit to hold both to) instead of this tree's.
set -eu
pairs=${1:-8}
cd "$(dirname "$0")/../.."
root=$(pwd)
gotest=${IDEM_BENCH_GO_TEST:-/tmp/idem_pgx_bench.test}
[ -n "${IDEM_BENCH_GO_TEST:-}" ] || go test -c -o "$gotest" ./store/pgx/ >/dev/null
# node_round DIR: one 5 s round of DIR's loop, in req/s (its migrations this tree's).
node_round() {
	IDEM_REPO_ROOT=$root IDEM_BENCH_PG_ROUNDS=1 IDEM_BENCH_PG_SECONDS=5 node "$1/wasm/js/bench_do.mjs" | awk '/PostgreSQL/ { print $(NF-1) }'
}
i=0
while [ "$i" -lt "$pairs" ]; do
	g=$("$gotest" -test.run '^$' -test.bench 'BenchmarkDoNewKey/clients=16$' -test.benchtime 5s | awk '/req\/s/ { for (f = 1; f <= NF; f++) if ($(f+1) == "req/s") print $f }')
	# With a base, the two Node rounds take turns going first.
	if [ -n "${IDEM_BENCH_BASE:-}" ] && [ $((i % 2)) -eq 1 ]; then b=$(node_round "$IDEM_BENCH_BASE"); fi
	n=$(node_round "$root")
	if [ -n "${IDEM_BENCH_BASE:-}" ] && [ $((i % 2)) -eq 0 ]; then b=$(node_round "$IDEM_BENCH_BASE"); fi
	line="pair $((i + 1)): go $g req/s, node $n req/s"
	if [ -n "${IDEM_BENCH_BASE:-}" ]; then
		line="$line, base $b req/s, base ratio $(echo "$b $g" | awk '{ printf "%.2f", $1 / $2 }')"
	fi
	echo "$line, ratio $(echo "$n $g" | awk '{ printf "%.2f", $1 / $2 }')"
	i=$((i + 1))
done | tee /tmp/idem_bench_ratio.txt
median() { awk '{ r[NR] = $1 } END { n = asort(r); m = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2; printf "%.2f (%d pairs, %.2f-%.2f)", m, n, r[1], r[n] }'; }
echo "median ratio: $(awk '{ print $NF }' /tmp/idem_bench_ratio.txt | median)"
if [ -n "${IDEM_BENCH_BASE:-}" ]; then
	echo "median base ratio: $(awk '/base ratio/ { for (f = 1; f <= NF; f++) if ($f == "ratio" && $(f-1) == "base") print $(f+1) }' /tmp/idem_bench_ratio.txt | tr -d , | median)"
fi
