package idem_test

import (
	"context"
	"crypto/sha256"
	"strconv"
	"testing"

	"github.com/idemkit/idem"
	memstore "github.com/idemkit/idem/store/mem"
)

// BenchmarkDo is Executor.Do over the memory store: a request with a new
// key (reserve, run the action, complete), and a retry of a completed one
// (a replay). The action only returns its response: what is measured is
// the executor and the store around it.
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	fp := idem.Fingerprint(sha256.Sum256([]byte(`{"amount":100}`)))
	resp := idem.Response{StatusCode: 201, Body: []byte(`{"paymentId":"p-1"}`), SchemaVersion: 1}
	action := func(context.Context, idem.Attempt) (idem.Response, error) { return resp, nil }
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = "550e8400-e29b-41d4-" + strconv.FormatInt(int64(1<<40+i), 16)
	}
	newExecutor := func() *idem.Executor {
		ex, err := idem.New(memstore.New(memstore.Options{}))
		if err != nil {
			b.Fatal(err)
		}
		return ex
	}
	b.Run("execute", func(b *testing.B) {
		ex := newExecutor()
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			req := request(keys[i&(len(keys)-1)], fp)
			if i++; i&(len(keys)-1) == 0 {
				ex = newExecutor()
			}
			if r, err := ex.Do(ctx, req, action); err != nil || r.Kind != idem.ResultExecuted {
				b.Fatal(r.Kind, err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		ex := newExecutor()
		req := request(keys[0], fp)
		if _, err := ex.Do(ctx, req, action); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if r, err := ex.Do(ctx, req, action); err != nil || r.Kind != idem.ResultReplayed {
				b.Fatal(r.Kind, err)
			}
		}
	})
}
