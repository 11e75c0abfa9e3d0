package fingerprint

import (
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/idemkit/idem/fingerprint/internal/benchdata"
)

// The comparison with github.com/gowebpki/jcs is in the separate module
// ./internal/jcsbench, so that this module does not depend on it.

var benchInputs = benchdata.Inputs()

// BenchmarkCanonicalize: canonical form into a reused buffer.
func BenchmarkCanonicalize(b *testing.B) {
	for _, in := range benchInputs {
		b.Run(in.Name, func(b *testing.B) {
			buf := make([]byte, 0, 2*len(in.In))
			b.SetBytes(int64(len(in.In)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = AppendCanonical(buf[:0], in.In)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOf: the whole fingerprint, canonical form and SHA-256.
func BenchmarkOf(b *testing.B) {
	for _, in := range benchInputs {
		for _, spec := range []struct {
			name string
			opts []Option
		}{
			{"all", nil},
			{"exclude", []Option{Exclude("/client_ts", "/metadata/note", "/batch_id")}},
			{"include", []Option{Include("/amount", "/customer/id", "/payments/3")}},
		} {
			b.Run(in.Name+"/"+spec.name, func(b *testing.B) {
				sp := mustSpec(b, "payments.create", 1, spec.opts...)
				b.SetBytes(int64(len(in.In)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := sp.Of(in.In); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkNaive: encoding/json into any, back out (sorted keys), SHA-256.
// Not RFC 8785 (it escapes <>&, U+2028, sorts by UTF-8, keeps -0, accepts
// duplicates and invalid UTF-8): the cheap approach idem must beat.
func BenchmarkNaive(b *testing.B) {
	for _, in := range benchInputs {
		b.Run(in.Name, func(b *testing.B) {
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
