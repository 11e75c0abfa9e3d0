package jcsbench

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/idemkit/idem/fingerprint"
	"github.com/idemkit/idem/fingerprint/internal/benchdata"
)

var inputs = []struct {
	name string
	in   []byte
}{
	{"payment", []byte(benchdata.Payment)},
	{"doc64k", benchdata.Document64K()},
}

// BenchmarkCompare runs, per input: idem's canonical form into a reused
// buffer plus SHA-256 (canonical+sha256), idem's whole fingerprint
// (Of), gowebpki/jcs Transform plus SHA-256 (gowebpki), and encoding/json
// unmarshal into any, marshal, SHA-256 (naive).
func BenchmarkCompare(b *testing.B) {
	for _, in := range inputs {
		b.Run(in.name+"/impl=idem-canonical+sha256", func(b *testing.B) {
			buf := make([]byte, 0, 2*len(in.in))
			b.SetBytes(int64(len(in.in)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = fingerprint.AppendCanonical(buf[:0], in.in)
				if err != nil {
					b.Fatal(err)
				}
				_ = sha256.Sum256(buf)
			}
		})
		b.Run(in.name+"/impl=idem-Of", func(b *testing.B) {
			sp, err := fingerprint.NewSpec("payments.create", 1)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(in.in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sp.Of(in.in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/impl=gowebpki", func(b *testing.B) {
			b.SetBytes(int64(len(in.in)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := jcs.Transform(in.in)
				if err != nil {
					b.Fatal(err)
				}
				_ = sha256.Sum256(out)
			}
		})
		b.Run(in.name+"/impl=naive", func(b *testing.B) {
			b.SetBytes(int64(len(in.in)))
			b.ReportAllocs()
			for b.Loop() {
				var v any
				if err := json.Unmarshal(in.in, &v); err != nil {
					b.Fatal(err)
				}
				out, err := json.Marshal(v)
				if err != nil {
					b.Fatal(err)
				}
				_ = sha256.Sum256(out)
			}
		})
	}
}

// TestSameOutput: on the benchmark inputs and the RFC 8785 test data, idem
// and gowebpki/jcs produce the same bytes, so the benchmark compares equal
// work.
func TestSameOutput(t *testing.T) {
	files, err := filepath.Glob("../../testdata/jcs/input/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("RFC 8785 inputs: %v", err)
	}
	all := inputs
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, struct {
			name string
			in   []byte
		}{filepath.Base(f), b})
	}
	for _, in := range all {
		ours, err := fingerprint.Canonicalize(in.in)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		theirs, err := jcs.Transform(in.in)
		if err != nil {
			t.Fatalf("%s: gowebpki: %v", in.name, err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Errorf("%s: outputs differ\nidem     %q\ngowebpki %q", in.name, ours, theirs)
		}
	}
}
