# The README's commands. `make test` is what CI runs (.ci/run).
GO       ?= go
FUZZTIME ?= 30s
BENCHCOUNT ?= 6

FUZZPKGS ?= ./fingerprint/

SIMSEEDS ?= 500

MUTANTSEEDS    ?= 1000
MUTANTLINSEEDS ?= 500
MUTANTSRUN     ?=

.PHONY: sim sim-pgo sim-long test bench bench-node bench-http cover fuzz bench-fingerprint lincheck-long wasm chaos-pg chaos-redis bench-pg bench-pg-million bench-pg-partitions bench-redis mutants

## sim: the main job: SIMSEEDS swarm seeds, every fault on, over the memory store
sim:
	$(GO) run ./cmd/simrun -seeds $(SIMSEEDS) -faults all

## sim-pgo: rewrite cmd/simrun/default.pgo, the CPU profile the go command
## optimises simrun with (PGO, on by default for a main package): one
## BenchmarkRun of sim-long's settings. Re-run it when the world changes much.
sim-pgo:
	GOGC=800 $(GO) test -run '^$$' -bench 'BenchmarkRun/requests=1000' -benchtime 150x -cpuprofile cmd/simrun/default.pgo -o /tmp/idem-sim-pgo.test ./sim/
	rm -f /tmp/idem-sim-pgo.test

## sim-long: ten million simulated requests (see BENCHMARKS.md)
sim-long:
	$(GO) build -o bin/simrun ./cmd/simrun
	bash -c 'time ./bin/simrun -seeds 10000 -requests 1000 -lincheck=false'

## test: gofmt, go.mod tidy, vet and staticcheck (pinned in tools/go.mod), then
## wasm/js's npm packages by its lockfile (npm ci: pg, express), then
## every test with the race detector (under 5 minutes here), then the
## allocation tests, which only mean something without it;
## the fingerprint comparison module checks our bytes against gowebpki/jcs
test:
	@unformatted=$$(gofmt -l $$(find . -name '*.go' -not -path '*/node_modules/*')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt -l: $$unformatted"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) tool -modfile=tools/go.mod staticcheck ./...
	cd wasm/js && npm ci --no-audit --no-fund --loglevel=error # by the lockfile: pg (wasm/js's PostgreSQL store, which Go tests run) and express (its example and tests)
	$(GO) test -race ./...
	$(GO) test -count=1 -run 'Allocs$$' ./fingerprint/ . # allocation counts: built without -race only
	cd fingerprint/internal/jcsbench && $(GO) vet ./... && $(GO) test ./...
	@echo "== node $$(node --version): wasm/js tests"; node --test wasm/js/

## bench: every benchmark, with allocations, BENCHCOUNT times (compare with benchstat)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCHCOUNT) ./...

## bench-http: idemhttp against the bare handler, 1 KB JSON body, memory
## store, in one run: in process (httptest) and over 127.0.0.1 with a Go
## load loop (req/s); no load tool to install. The interleaved benchmark
## prints the ratios the targets are about (see BENCHMARKS.md)
bench-http:
	$(GO) test -run '^$$' -bench 'InProcess|Loopback/' -benchmem -count $(BENCHCOUNT) ./idemhttp/
	$(GO) test -run '^$$' -bench 'LoopbackInterleaved' -benchtime 10x -count 3 ./idemhttp/

## cover: test coverage per function, total last
cover:
	$(GO) test -coverprofile=cover.out ./...
	$(GO) tool cover -func=cover.out | tail -n 25

## fuzz: every fuzz target of FUZZPKGS for FUZZTIME each
fuzz:
	@set -e; for pkg in $(FUZZPKGS); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$t ($(FUZZTIME))"; \
	    $(GO) test -run=NONE -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=10s $$pkg; \
	  done; \
	done

## bench-node: the Node executor (wasm/js) on the memory store and on
## PostgreSQL, and a Step from Node (see BENCHMARKS.md, "Node.js")
bench-node:
	cd wasm/js && npm ci --no-audit --no-fund --loglevel=error
	node wasm/js/bench_do.mjs
	node wasm/js/bench.mjs

## bench-fingerprint: ours against gowebpki/jcs and encoding/json, in one run
bench-fingerprint:
	cd fingerprint/internal/jcsbench && $(GO) test -run=NONE -bench=. -benchmem -count=10

## lincheck-long: the memory store against 1,000 consecutive linearizability
## histories per stress test (about 2-3 minutes; make test runs 50)
lincheck-long:
	IDEM_LIN_HISTORIES=1000 $(GO) test -race -count=1 -timeout 30m -run '^TestMemstoreConformance$$' ./store/mem/

## wasm: the core as a wasip1 reactor (wasm/idem.wasm, embedded by package
## wasmcore) and package fingerprint as a second one (wasm/fingerprint.wasm,
## for wasm/js/fingerprint.mjs), stripped, and the stamps that let a test see
## either is stale
wasm:
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags='-s -w' -o wasm/idem.wasm ./wasm/guest
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags='-s -w' -o wasm/fingerprint.wasm ./wasm/fpguest
	$(GO) run ./wasm/internal/stampcmd
	@for m in idem fingerprint; do echo "wasm/$$m.wasm: $$(wc -c < wasm/$$m.wasm) bytes, $$(gzip -9 -c wasm/$$m.wasm | wc -c) gzipped"; done

## chaos-pg: the store/pgx chaos harness on IDEM_PG_DSN: 24 retrying clients,
## killed backends, tiny statement timeouts and one server restart, then
## convergence and the invariants (make test runs a short one, TestChaosShort)
chaos-pg:
	$(GO) run ./store/pgx/internal/chaos/chaospg -faults 30s -restart

## chaos-redis: the store/redis chaos harness, for WAIT 0 and WAIT 1
## (ReplicasWait), each on a 3-primary, 3-replica cluster of its own on
## loopback: 24 retrying clients while primaries are killed (SIGKILL), fail
## over and rejoin, then convergence, the invariants and what was lost
## (about a minute and a half; make test runs a short one, TestChaosShort)
chaos-redis:
	$(GO) run ./store/redis/internal/chaos/chaosredis -faults 30s

## bench-pg: pgbench's raw-SQL baselines, then the driver's own benchmarks,
## one right after the other (see BENCHMARKS.md, store/pgx)
bench-pg:
	SCEN="b_lifecycle_autocommit d_replay" DUR=10 bash ../shared/bench/pg/run.sh
	$(GO) test -run '^$$' -bench 'DoNewKey|DoReplay|DoReadFirst|DoInsertOrRead|Floor' -benchmem -count 3 ./store/pgx/
	$(GO) test -run '^$$' -bench 'AgainstPgbench' -benchtime 7x ./store/pgx/ # pgbench and the driver in turns: the ratios of issue 25
	$(GO) test -run '^$$' -bench 'WakeLatency' -benchtime 40x ./store/pgx/
	$(GO) test -run '^$$' -bench 'SweepInstances' -benchtime 3x -count 3 ./store/pgx/

## bench-pg-million: a sweep, a Due listing and a prune over a table of
## 1,000,000 records, in batches of 100 and 1000 (the preload takes a minute)
bench-pg-million:
	$(GO) test -run '^$$' -bench 'Million' -benchtime 10x -timeout 30m ./store/pgx/

## bench-pg-partitions: a day of tombstones removed by batched Prune on a
## plain table and by KeepPartitions' drop on a table partitioned by day,
## the same rows each way (PARTITION_ROWS records over ten days, a tenth
## of them the day's tombstones), then Do's new key and replay at 16
## clients on a plain and a partitioned table, interleaved (see
## BENCHMARKS.md; 10,000,000 rows take about 15 minutes, mostly preloads)
PARTITION_ROWS ?= 1000000
bench-pg-partitions:
	IDEM_PG_DROP_ROWS=$(PARTITION_ROWS) $(GO) test -run '^$$' -bench 'PartitionDrop' -benchtime 1x -timeout 60m ./store/pgx/
	$(GO) test -run '^$$' -bench 'PartitionedDo' -benchtime 5s -count 3 ./store/pgx/

## bench-redis: store/redis's Do beside the raw scripts (the driver's own
## EVALSHA calls straight through go-redis), interleaved in one run, on the
## tests' own standalone server and 3-primary cluster, 1 and 16 clients;
## then the PostgreSQL driver's Do at 16 clients (see BENCHMARKS.md)
bench-redis:
	$(GO) test -run '^$$' -bench 'Interleaved' -benchtime 10x -count 5 -timeout 30m ./store/redis/
	$(GO) test -run '^$$' -bench 'Do(NewKey|Replay)/clients=16$$' -benchtime 4s -count 5 ./store/pgx/

## mutants: every mutant of the catalogue (mutants/catalogue.go) against every
## test layer (unit, conformance, simulator, simulator -lincheck), applied by
## build overlay without touching the tree; prints the kill matrix of
## MUTANTS.md (about 3 hours on 2 cores; MUTANTS.md gives the faster per-layer runs). MUTANTSRUN: a regexp of mutant IDs
mutants:
	$(GO) run ./mutants/cmd/mutate -seeds $(MUTANTSEEDS) -lin-seeds $(MUTANTLINSEEDS) -run '$(MUTANTSRUN)'
