# The README's commands. `make test` is what CI runs (.ci/run).
GO       ?= go
FUZZTIME ?= 30s
BENCHCOUNT ?= 6

.PHONY: test bench cover

## test: vet, then every test with the race detector (under 5 minutes here)
test:
	$(GO) vet ./...
	$(GO) test -race ./...

## bench: every benchmark, with allocations, BENCHCOUNT times (compare with benchstat)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCHCOUNT) ./...

## cover: test coverage per function, total last
cover:
	$(GO) test -coverprofile=cover.out ./...
	$(GO) tool cover -func=cover.out | tail -n 25
