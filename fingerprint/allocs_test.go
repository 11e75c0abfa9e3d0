//go:build !race

// The race detector makes sync.Pool drop items on purpose, so allocation
// counts mean nothing under it: these tests are built without -race only,
// and make test runs them in a run of their own.

package fingerprint

import "testing"

// With a reused output buffer, canonicalization does not allocate.
func TestAppendCanonicalAllocs(t *testing.T) {
	in := mustRead(t, "testdata/jcs/input/weird.json")
	in = append(in[:len(in):len(in)], []byte(`   `)...)
	many := []byte(`{"p":1,"o":2,"n":3,"m":4,"l":5,"k":6,"j":7,"i":8,"h":9,"g":10,"f":11,"e":12,"d":13,"c":14,"b":15,"a\u0041":16}`)
	for _, doc := range [][]byte{in, many, mustRead(t, "testdata/jcs/input/values.json"), mustRead(t, "testdata/jcs/input/structures.json")} {
		buf := make([]byte, 0, 4096)
		var err error
		allocs := testing.AllocsPerRun(100, func() {
			buf, err = AppendCanonical(buf[:0], doc)
		})
		if err != nil {
			t.Fatal(err)
		}
		if allocs != 0 {
			t.Errorf("AppendCanonical allocates %.1f times per call, want 0", allocs)
		}
	}
}

// A compiled Spec does not allocate per call.
func TestOfAllocs(t *testing.T) {
	body := mustRead(t, "testdata/jcs/input/structures.json")
	for _, sp := range []*Spec{
		mustSpec(t, "u", 1),
		mustSpec(t, "u", 1, Exclude("/111/0/e")),
		mustSpec(t, "u", 1, Include("/1/f", "/a", "/none"), Exclude("/1/f/F")),
	} {
		var err error
		allocs := testing.AllocsPerRun(100, func() { _, err = sp.Of(body) })
		if err != nil {
			t.Fatal(err)
		}
		if allocs != 0 {
			t.Errorf("Spec.Of allocates %.1f times per call, want 0", allocs)
		}
	}
}
