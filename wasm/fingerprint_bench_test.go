package wasmcore

import (
	"testing"

	"github.com/idemkit/idem/fingerprint"
	"github.com/idemkit/idem/wasm/internal/fpabi"
)

// fpBenchBody is a payment request of about 300 bytes, the body the Node
// measurement of spec.of uses too (BENCHMARKS.md's method: the same bytes
// on both sides).
const fpBenchBody = `{"amount":{"value":125000,"currency":"EUR"},"customer":{"id":"cus_2c9341ca4cf3d87b","email":"jane.doe+billing@example.com","name":"Jane \u201cJD\u201d Doe"},"line_items":[{"sku":"SKU-001","quantity":2,"unit_amount":350},{"sku":"SKU-002","quantity":3,"unit_amount":195}],"capture":true,"client_ts":"2024-05-17T09:31:12.123Z"}`

// BenchmarkFingerprintOf: Spec.Of over fpBenchBody natively, and through
// fingerprint.wasm under wazero (the call, the body written into the
// module, the digest read back).
func BenchmarkFingerprintOf(b *testing.B) {
	body := []byte(fpBenchBody)
	b.Run("native", func(b *testing.B) {
		sp, err := fingerprint.NewSpec("payments.create", 1, fingerprint.Exclude("/client_ts"))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sp.Of(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wasm", func(b *testing.B) {
		m := newFPModule(b)
		h, err := m.spec(&fpabi.SpecRequest{UseCase: "payments.create", SchemaVersion: 1, Exclude: []string{"/client_ts"}})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := m.of(h, body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
