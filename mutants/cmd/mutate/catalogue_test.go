package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemkit/idem/mutants"
)

// TestCatalogueApplies keeps the catalogue true in go test, not only in make
// mutants: every mutant's snippet occurs exactly once in its file, the file
// lies in an area, and every ID is listed once. Code that moves without its
// mutant fails here.
func TestCatalogueApplies(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := pickMutants("")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != len(mutants.Catalogue) {
		t.Fatalf("picked %d of %d mutants", len(ms), len(mutants.Catalogue))
	}
	var log bytes.Buffer
	if !applies(root, ms, &log) {
		t.Fatalf("the catalogue does not apply:\n%s", log.String())
	}
	for _, m := range ms {
		if m.Old == m.New {
			t.Errorf("%s: its replacement is its snippet: it plants nothing", m.ID)
		}
		if m.Desc == "" || m.Breaks == "" {
			t.Errorf("%s: no Desc or Breaks", m.ID)
		}
	}
}

// TestAppliesCatchesAStaleMutant plants what TestCatalogueApplies is for: a
// snippet that no longer occurs, one that occurs twice, a file in no area.
func TestAppliesCatchesAStaleMutant(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    mutants.Mutant
		want string
	}{
		{"snippet gone", mutants.Mutant{ID: "stale-gone", File: "core/step.go", Old: "no such code in the file", New: "x"}, "occurs 0 times"},
		{"snippet twice", mutants.Mutant{ID: "stale-twice", File: "core/step.go", Old: "\nfunc ", New: "x"}, "want once"},
		{"file in no area", mutants.Mutant{ID: "stale-area", File: "tools/go.mod", Old: "module ", New: "x"}, "in no area"},
	} {
		var log bytes.Buffer
		if applies(root, []*mutants.Mutant{&c.m}, &log) {
			t.Errorf("%s: applies, want refused", c.name)
		} else if !strings.Contains(log.String(), c.want) {
			t.Errorf("%s: said %q, want it to say %q", c.name, log.String(), c.want)
		}
	}
	if _, err := pickMutants("("); err == nil {
		t.Error("a bad -run expression is taken")
	}
}
