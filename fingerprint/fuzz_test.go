package fingerprint

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fuzzSeeds are inputs for the fuzz targets besides testdata/fuzz: the RFC
// 8785 inputs and one of each rejection.
func fuzzSeeds(f *testing.F) [][]byte {
	seeds := [][]byte{
		[]byte(`{"b":[1,2.50,{"y":"\u00e9","x":null}],"a":true,"":-0}`),
		[]byte(`{"\ud83d\ude02":1,"\ufb33":2,"\ue000":3}`),
		[]byte(`[1e21,1e-7,9007199254740993,0.30000000000000004,5e-324,1e400]`),
		[]byte(`{"a":1,"a":2}`),
		[]byte("\"\xed\xa0\x80\""),
		[]byte(`"\ud800\u0041"`),
		[]byte("\xef\xbb\xbf[]"),
		[]byte(`[01,.5,+1,1.,0x10,NaN]`),
		[]byte(`[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]`),
		[]byte(`{"a":{"b":[true,false,null]}} x`),
	}
	files, _ := filepath.Glob("testdata/jcs/input/*.json")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// FuzzCanonicalize: no panic; accepted input is valid JSON to encoding/json
// and means the same; the output is a fixed point; errors are *Error.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	c := Canonicalizer{DepthMax: 64}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := c.Canonicalize(in)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind == nil || e.Offset < 0 || e.Offset > int64(len(in)) {
				t.Fatalf("bad error %#v", err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted %q, which encoding/json rejects", in)
		}
		if !json.Valid(out) {
			t.Fatalf("output %q of %q is not valid JSON", out, in)
		}
		again, err := c.Canonicalize(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("output is not a fixed point: %q -> %q -> %q (%v)", in, out, again, err)
		}
		var x, y any
		if err := json.Unmarshal(in, &x); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &y); err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(x, y) {
			t.Fatalf("meaning changed: %q -> %q", in, out)
		}
	})
}

// jsonEqual is reflect.DeepEqual for encoding/json values (where -0 == 0).
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// FuzzOf: no panic under any selection; the fingerprint of a body equals
// that of its canonical form; errors are *Error.
func FuzzOf(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, "/a", "/b/0", false)
	}
	f.Add([]byte(`{"a":{"x":1,"y":[1,2]},"b":[{"c":1}]}`), "/a/y/1", "/b", true)
	f.Fuzz(func(t *testing.T, body []byte, p1, p2 string, include bool) {
		var opts []Option
		if include {
			opts = append(opts, Include(p1), Exclude(p2))
		} else {
			opts = append(opts, Exclude(p1, p2))
		}
		sp, err := NewSpec("fuzz", 1, opts...)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind != ErrPointer {
				t.Fatalf("NewSpec: %#v", err)
			}
			return
		}
		fp, err := sp.Of(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Of: %#v", err)
			}
			return
		}
		canon, err := Canonicalize(body)
		if err != nil {
			t.Fatalf("Of accepted %q but Canonicalize: %v", body, err)
		}
		fp2, err := sp.Of(canon)
		if err != nil || fp2 != fp {
			t.Fatalf("canonical form %q has another fingerprint (%v)", canon, err)
		}
	})
}
