// Package mutants is the catalogue of semantic mutants (issue 11 §2, issue
// 20 §7): each one a small patch (one snippet of one file replaced by
// another) that plants one realistic bug in one layer: the core, the
// store's Op and the memory store, the executor, the fingerprint, the
// PostgreSQL driver, the conformance suite, the HTTP middleware and its
// example, the wasm hosts (Go and Node), the simulator's checkers, and the
// reference model of the lifecycle that core's tests and the simulator share.
// `make mutants` (mutants/cmd/mutate) applies each without touching the
// working tree, runs every test layer that reaches it and prints the kill
// matrix. MUTANTS.md holds the last run.
//
// The mutants run only in `make mutants`; `go test ./...` checks that each
// still applies (mutants/cmd/mutate's TestCatalogueApplies): its snippet
// occurs exactly once in its file, so that code moving without its mutant
// fails the tests.
package mutants

import "slices"

// Mutant is one planted bug.
type Mutant struct {
	ID   string // stable name, prefixed by area: core-, op-, mem-, exec-, fp-, pgx-, suite-, http-, wasm-, js-, sim-, ref-
	File string // path from the module root
	Old  string // a snippet that occurs exactly once in File
	New  string // what replaces it
	Desc string // the bug it plants, one line
	// Breaks names the SPEC §5 row or rule and the §6 invariant the bug
	// breaks.
	Breaks string
	// Equivalent, when set, says why the mutant cannot change behaviour:
	// it is expected to survive every layer and counts in no target.
	Equivalent string
}

// Catalogue lists every mutant, in the matrix's order: one file of data per
// area (mutants/cmd/mutate's areas.go says which tests are each area's own).
var Catalogue = slices.Concat(coreMutants, storeMutants, execMutants, fpMutants,
	pgxMutants,
	storetestMutants,
	httpMutants,
	wasmMutants,
	jsMutants,
	simMutants,
	refMutants,
)
