package idem_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// Issue 20 §1: a deterministic rejection by the store is a rejection, not an
// outage, and no value the caller gives can leave a key locked.

// TestStoreRejectedReserveIsNotAnOutage: a reserve the store rejects runs
// nothing and answers ErrStoreRejected (500, no Retry-After), counted in
// store.rejected and not in store.error.
func TestStoreRejectedReserveIsNotAnOutage(t *testing.T) {
	f := newFixture(t, nil)
	f.store.rejectIf = func(r *idem.Record) bool { return r.Status == core.StatusInProgress }
	_, err := f.ex.Do(context.Background(), request(key1, payload), f.act(created, nil))
	var e *idem.Error
	if !errors.As(err, &e) || e.Code != idem.CodeStoreRejected || e.Status != http.StatusInternalServerError || e.RetryAfter != 0 {
		t.Fatalf("err %v", err)
	}
	if errors.Is(err, idem.ErrStoreUnavailable) || f.ran.Load() != 0 {
		t.Fatalf("an outage, or the action ran (%d)", f.ran.Load())
	}
	if f.metrics.Total(idem.CounterStoreRejected) != 1 || f.metrics.Total(idem.CounterStoreError) != 0 {
		t.Fatalf("rejected %d, store errors %d", f.metrics.Total(idem.CounterStoreRejected), f.metrics.Total(idem.CounterStoreError))
	}
}

// TestStoreRejectedCompletionGoesToTheReconciler: the action ran, the store
// refuses its outcome for good: the caller gets the true response, not
// recorded, and the key is unknown at once (store_rejected), not in_progress
// until its lease ends.
func TestStoreRejectedCompletionGoesToTheReconciler(t *testing.T) {
	f := newFixture(t, nil)
	f.store.rejectIf = func(r *idem.Record) bool { return r.Status == core.StatusCompleted }
	req := request(key1, payload)
	r, err := f.ex.Do(context.Background(), req, f.act(created, nil))
	if err != nil || r.Kind != idem.ResultExecuted || r.Recorded || !r.Response.Equal(created) {
		t.Fatalf("%+v %v", r, err)
	}
	rec := f.record(t, req)
	if rec.Status != core.StatusUnknown || rec.LastErrorCode != "store_rejected" || rec.ReconcileAfter.IsZero() {
		t.Fatalf("record %s", rec.Describe())
	}
	if f.metrics.Total(idem.CounterStoreRejected) != 1 || f.metrics.Total(idem.CounterStoreError) != 0 {
		t.Fatal("the refusal was not counted as one")
	}
	if _, err := f.ex.Do(context.Background(), req, f.act(created, nil)); !errors.Is(err, idem.ErrOutcomeUnknown) || f.ran.Load() != 1 {
		t.Fatalf("a retry: %v, ran %d", err, f.ran.Load())
	}
}

// TestStoreRejectedFailureSaysTheKeyIsNotFree: a Fail the store rejects is
// ErrStoreRejected (the key is not free, and retrying will not free it), and
// the key goes to the reconciler.
func TestStoreRejectedFailureSaysTheKeyIsNotFree(t *testing.T) {
	f := newFixture(t, nil)
	f.store.rejectIf = func(r *idem.Record) bool { return r.Status == core.StatusFailedRetryable }
	req := request(key1, payload)
	_, err := f.ex.Do(context.Background(), req, f.act(idem.Response{}, idem.NotExecuted(errors.New("card invalid"))))
	if !errors.Is(err, idem.ErrStoreRejected) || errors.Is(err, idem.ErrNotExecuted) {
		t.Fatalf("err %v", err)
	}
	if rec := f.record(t, req); rec.Status != core.StatusUnknown || rec.LastErrorCode != "store_rejected" {
		t.Fatalf("record %s", rec.Describe())
	}
}

// TestNotExecutedWithABadCodeFreesTheKey: the action's own code is not an
// error code the core accepts (a NUL, a space, non-ASCII, 65 bytes): the key
// is released all the same, with the default code, and the caller is told
// its code was rejected. Nothing reaches the store's error counters.
func TestNotExecutedWithABadCodeFreesTheKey(t *testing.T) {
	for _, code := range []string{"no\x00nul", "card declined", "caf\xe9", string(make([]byte, core.ErrorCodeBytesMax+1))} {
		f := newFixture(t, nil)
		req := request(key1, payload)
		_, err := f.ex.Do(context.Background(), req, f.act(idem.Response{}, &idem.NotExecutedError{Err: errors.New("refused"), Code: idem.ErrorCode(code)}))
		if !errors.Is(err, idem.ErrNotExecuted) || !errors.Is(err, core.ErrInvalidErrorCode) {
			t.Fatalf("code %q: %v", code, err)
		}
		if rec := f.record(t, req); rec.Status != core.StatusFailedRetryable || rec.LastErrorCode != core.ErrorCodeNotExecuted {
			t.Fatalf("code %q: record %s", code, rec.Describe())
		}
		if r, err := f.ex.Do(context.Background(), req, f.act(created, nil)); err != nil || r.Kind != idem.ResultExecuted {
			t.Fatalf("code %q: the retry %+v %v", code, r, err)
		}
		if f.metrics.Total(idem.CounterStoreError)+f.metrics.Total(idem.CounterStoreRejected) != 0 {
			t.Fatalf("code %q was counted as a store failure", code)
		}
	}
	// A code the core accepts is stored as it is, at the limit too.
	f := newFixture(t, nil)
	req := request(key1, payload)
	long := idem.ErrorCode(strings.Repeat("x", core.ErrorCodeBytesMax))
	_, _ = f.ex.Do(context.Background(), req, f.act(idem.Response{}, &idem.NotExecutedError{Err: errors.New("refused"), Code: long}))
	if rec := f.record(t, req); rec.LastErrorCode != long {
		t.Fatalf("record %s", rec.Describe())
	}
}

// TestReconcilerReschedulesAFindingTheStoreRejects: the store rejects to
// write a finding for good: the record is rescheduled with backoff
// (store_rejected), the batch goes on, and the next run does not start with
// it again.
func TestReconcilerReschedulesAFindingTheStoreRejects(t *testing.T) {
	f := newFixture(t, nil)
	first, second := request(key1, payload), request(key2, payload)
	f.unknownKey(t, first) // the most overdue: first in every batch
	f.clock.Advance(time.Second)
	f.unknownKey(t, second)
	f.store.rejectIf = func(r *idem.Record) bool { return r.Scope == first.Scope && r.Status == core.StatusCompleted }
	rec := f.reconciler(t, func(_ context.Context, r idem.Record) (idem.Finding, error) {
		return idem.Finding{Verdict: core.VerdictExecuted, Response: created}, nil
	})
	n, err := rec.RunOnce(context.Background())
	if n != 1 || err == nil || f.status(t, second) != core.StatusCompleted {
		t.Fatalf("settled %d (%v); the good record is %v", n, err, f.status(t, second))
	}
	r := f.record(t, first)
	if r.Status != core.StatusUnknown || r.ReconcileAttempts != 1 || r.LastErrorCode != "store_rejected" || !r.ReconcileAfter.After(f.clock.Now()) {
		t.Fatalf("the refused record: %s", r.Describe())
	}
	if f.metrics.Total(idem.CounterStoreRejected) != 1 || f.metrics.Total(idem.CounterWorkerError) == 0 {
		t.Fatal("the refusal was not counted")
	}
	if n, err := rec.RunOnce(context.Background()); n != 0 || err != nil {
		t.Fatalf("the next run: %d %v", n, err)
	}
}

// TestReconcilerRecoversAPanickingCheck (issue 20 §4): a Check that panics
// does not take RunOnce down; the record is rescheduled (check_failed), the
// panic counted in worker.error, and the other records of the batch are
// settled.
func TestReconcilerRecoversAPanickingCheck(t *testing.T) {
	f := newFixture(t, nil)
	first, second := request(key1, payload), request(key2, payload)
	f.unknownKey(t, first)
	f.clock.Advance(time.Second)
	f.unknownKey(t, second)
	rec := f.reconciler(t, func(_ context.Context, r idem.Record) (idem.Finding, error) {
		if r.Scope == first.Scope {
			panic("nil map in the ledger client")
		}
		return idem.Finding{Verdict: core.VerdictExecuted, Response: created}, nil
	})
	n, err := rec.RunOnce(context.Background())
	if n != 1 || f.status(t, second) != core.StatusCompleted {
		t.Fatalf("settled %d (%v)", n, err)
	}
	r := f.record(t, first)
	if r.Status != core.StatusUnknown || r.LastErrorCode != "check_failed" || r.ReconcileAttempts != 1 || !r.ReconcileAfter.After(f.clock.Now()) {
		t.Fatalf("the panicking record: %s", r.Describe())
	}
	if f.metrics.Total(idem.CounterWorkerError) != 1 {
		t.Fatalf("worker.error %d", f.metrics.Total(idem.CounterWorkerError))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	f.clock.Advance(time.Hour) // due again: Run must survive the panic too
	if err := rec.Run(ctx, time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v", err)
	}
}

// TestSweeperCountsPrunes (issue 20 §4): a tombstone's pruning counts as a
// change, so that a loop that sweeps until RunOnce says 0 empties the store.
func TestSweeperCountsPrunes(t *testing.T) {
	f := newFixture(t, func(p *idem.Policy) { p.TombstoneRetention = time.Minute })
	ctx := context.Background()
	req := request(key1, payload)
	if _, err := f.ex.Do(ctx, req, f.act(created, nil)); err != nil {
		t.Fatal(err)
	}
	sw := f.sweeper(t)
	f.clock.Advance(f.ex.Policy().TTL)
	if n, err := sw.RunOnce(ctx); n != 1 || err != nil || f.status(t, req) != core.StatusExpired {
		t.Fatalf("expired %d: %v", n, err)
	}
	f.clock.Advance(time.Minute)
	if n, err := sw.RunOnce(ctx); n != 1 || err != nil || f.status(t, req) != core.StatusAbsent {
		t.Fatalf("pruned %d: %v, status %v", n, err, f.status(t, req))
	}
	if n, err := sw.RunOnce(ctx); n != 0 || err != nil {
		t.Fatalf("nothing left, yet %d: %v", n, err)
	}
}

// TestKeyMisuseCarriesTheStoredFingerprint: ErrKeyMisuse's cause is the
// fingerprint the key's record holds (an edge says from it which part of
// the request differs).
func TestKeyMisuseCarriesTheStoredFingerprint(t *testing.T) {
	f := newFixture(t, nil)
	if _, err := f.ex.Do(context.Background(), request(key1, payload), f.act(created, nil)); err != nil {
		t.Fatal(err)
	}
	_, err := f.ex.Do(context.Background(), request(key1, other), f.act(created, nil))
	var misuse *idem.KeyMisuseError
	if !errors.Is(err, idem.ErrKeyMisuse) || !errors.As(err, &misuse) || misuse.StoredFingerprint() != payload {
		t.Fatalf("%v", err)
	}
}
