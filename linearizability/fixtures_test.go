package linearizability

import (
	"context"
	"crypto/sha256"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// The requests and outcomes of this package's hand-written histories.
var (
	fpA = core.Fingerprint(sha256.Sum256([]byte("model test: request A")))
	fpB = core.Fingerprint(sha256.Sum256([]byte("model test: request B")))

	responses = []core.Response{
		{StatusCode: 201, Body: []byte(`{"paymentId":"p-1"}`), SchemaVersion: 1},
		{StatusCode: 402, Body: []byte(`{"error":"card_declined"}`)},
	}
)

// applyOver is store.Apply with an Applied of its own, for tests and
// stress runs that keep what each event did.
func applyOver(ctx context.Context, s store.Store, p *core.Policy, scope core.Scope, ev core.Event) (store.Applied, error) {
	var a store.Applied
	err := store.Apply(ctx, s, scope, ev, p, &a)
	return a, err
}
