// Package refmodel is the reference model of the lifecycle: the two tables
// of SPEC §5 read a second time, from the SPEC and from what package core
// documents (its glossary, the fields of Record, the doc comments of Step's
// rules: default error codes, the tombstone's retention, a lease that never
// shrinks), and not from core/step.go. idem writes the table twice, here
// and in the core, and never a third time: the core's property test
// (core/model_test.go) holds core.Step to this model event by event, and
// the simulator's lifecycle checker (sim/check_store.go) holds every write
// a store applies, and every answer of a store's fast path, to it. A bug
// planted in either reading is caught by both.
//
// Step gives, for one record and one event, everything the table says:
// whether the core must refuse the event, the decision, the write (insert,
// update or delete, with its precondition) and the record it leaves, every
// field of it, so that a checker can hold a store's write to it field by
// field, not only the decision.
//
// # Core's types, none of core's code
//
// The model takes and returns core's plain types (Record, Event, Policy,
// Decision, Write) and calls none of core's functions or methods: not
// Step, not Policy.Validate, not Record.Exists, not Response.Equal; it
// names its error codes as strings of its own. Types of its own would need
// converting both ways at each caller, on the simulator's every store
// write, and a converter is one more place where the two readings could
// agree by accident. The price is that core's test of it is an external
// test (package core_test: core's own tests cannot import a package that
// imports core), which drives the property tests' world through
// core/export_test.go.
//
// # What it leaves out
//
// The model takes what the syntax rules let through: a policy that passes
// core's Validate, a scope that is one (SPEC §3), error codes and responses
// the core accepts, records the core could have written. Those refusals are
// input checking, held by core's own tests and by the simulator's bad-input
// checker (invariant 9), not rows of the table. The refusals the model does
// give are the ones that depend on the event's kind and the record: a
// missing time, token or fingerprint, an unknown kind or verdict, and a
// reserve's token that is not fresh for the record it would take over.
package refmodel
