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

var inputs = benchdata.Inputs()

// BenchmarkCompare runs, per input: idem's canonical form into a reused
// buffer plus SHA-256 (canonical+sha256), idem's whole fingerprint
// (Of), gowebpki/jcs Transform plus SHA-256 (gowebpki), and encoding/json
// unmarshal into any, marshal, SHA-256 (naive).
func BenchmarkCompare(b *testing.B) {
	for _, in := range inputs {
		b.Run(in.Name+"/impl=idem-canonical+sha256", func(b *testing.B) {
			buf := make([]byte, 0, 2*len(in.In))
			b.SetBytes(int64(len(in.In)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = fingerprint.AppendCanonical(buf[:0], in.In)
				if err != nil {
					b.Fatal(err)
				}
				_ = sha256.Sum256(buf)
			}
		})
		b.Run(in.Name+"/impl=idem-Of", func(b *testing.B) {
			sp, err := fingerprint.NewSpec("payments.create", 1)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(in.In)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sp.Of(in.In); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.Name+"/impl=gowebpki", func(b *testing.B) {
			b.SetBytes(int64(len(in.In)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := jcs.Transform(in.In)
				if err != nil {
					b.Fatal(err)
				}
				_ = sha256.Sum256(out)
			}
		})
		b.Run(in.Name+"/impl=naive", func(b *testing.B) {
			b.SetBytes(int64(len(in.In)))
			b.ReportAllocs()
			for b.Loop() {
				var v any
				if err := json.Unmarshal(in.In, &v); err != nil {
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
	all := benchdata.Inputs()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, benchdata.Input{Name: filepath.Base(f), In: b})
	}
	for _, in := range all {
		ours, err := fingerprint.Canonicalize(in.In)
		if err != nil {
			t.Fatalf("%s: %v", in.Name, err)
		}
		theirs, err := jcs.Transform(in.In)
		if err != nil {
			t.Fatalf("%s: gowebpki: %v", in.Name, err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Errorf("%s: outputs differ\nidem     %q\ngowebpki %q", in.Name, ours, theirs)
		}
	}
}
