package core

import "pgregory.net/rapid"

// What the external tests (package core_test) use of the internal ones:
// model_test.go holds the core to internal/refmodel, which imports core,
// so it cannot be in package core; it drives the property tests' world
// (property_test.go) through these.

// Source draws a world's random choices (source).
type Source = source

// World is a handful of scopes driven by random events (world).
type World = world

// RapidSource draws from rapid, which shrinks a failure.
func RapidSource(t *rapid.T) Source { return rapidSource{t} }

// FirstFailure runs run over the worlds of seeds 0..499 of stream and
// returns the first failure, or "" (firstFailure).
func FirstFailure(stream uint64, run func(Source)) string { return firstFailure(stream, run) }

// IntRange draws an int in [lo, hi] named name.
func IntRange(src Source, name string, lo, hi int) int { return src.intRange(name, lo, hi) }

// NewWorld draws a world: its policy, its scopes and their records.
func NewWorld(src Source) *World { return newWorld(src) }

// Policy is the world's policy, which a test may change before it starts.
func (w *world) Policy() *Policy { return &w.policy }

// Next picks a scope and draws a valid event for it: the scope's record,
// which the test replaces with the record the event leaves, and the event.
func (w *world) Next(src Source) (*Record, Event) {
	s := &w.scopes[src.intRange("scope", 0, len(w.scopes)-1)]
	return &s.cur, w.drawEvent(src, s)
}
