package idem_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// Issue 20 §2: a lost lease is told in time, whatever the store does.

// beatHanger lets the reserve and the outcome through, and holds every
// heartbeat until released, whatever its context says: a store that hangs
// rather than fails.
type beatHanger struct {
	release chan struct{}
	mu      sync.Mutex
	hung    int // heartbeats under way
	entered chan struct{}
	once    sync.Once
}

func newBeatHanger() *beatHanger {
	return &beatHanger{release: make(chan struct{}), entered: make(chan struct{})}
}

func (b *beatHanger) apply(next store.ApplyFunc) store.ApplyFunc {
	return func(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
		if ev.Kind != core.EventHeartbeat {
			return next(ctx, scope, ev, p, out)
		}
		b.mu.Lock()
		b.hung++
		b.mu.Unlock()
		b.once.Do(func() { close(b.entered) })
		<-b.release // ctx ignored: the store hangs
		b.mu.Lock()
		b.hung--
		b.mu.Unlock()
		return errors.New("store hung up")
	}
}

func (b *beatHanger) hanging() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hung
}

// TestHungHeartbeatStillEndsTheAttemptInTime: the first heartbeat hangs in
// the store. The action must be cancelled with ErrLeaseLost while that call
// still hangs, and before its lease ends on the store's own clock (on
// which the sweeper would reopen the key); and Do must return while the
// beat still hangs, not when the store lets go.
func TestHungHeartbeatStillEndsTheAttemptInTime(t *testing.T) {
	// Real time, as Do's heartbeat runs; a lease long enough that the
	// margin (150 ms) covers a busy machine's late timers.
	const lease = 3 * time.Second
	hanger := newBeatHanger()
	t.Cleanup(func() { close(hanger.release) })
	mem, ex := leaseExecutor(t, lease, lease/10, hanger.apply)
	req := request(key1, payload)
	var cause error
	var toldBeforeEnd bool
	hungWhenTold := 0
	_, err := ex.Do(context.Background(), req, func(ctx context.Context, at idem.Attempt) (idem.Response, error) {
		select {
		case <-hanger.entered:
		case <-time.After(10 * lease):
			t.Error("no heartbeat reached the store")
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * lease):
			t.Error("the action was never told")
			return created, nil
		}
		told := time.Now()
		cause, hungWhenTold = context.Cause(ctx), hanger.hanging()
		snap, err := mem.Load(context.Background(), req.Scope)
		toldBeforeEnd = err == nil && told.Before(snap.Record.LockedUntil)
		return idem.Response{}, ctx.Err()
	})
	if !errors.Is(cause, idem.ErrLeaseLost) {
		t.Fatalf("cause %v", cause)
	}
	if hungWhenTold == 0 {
		t.Fatal("the heartbeat had returned before the action was told: the test proves nothing")
	}
	if !toldBeforeEnd {
		t.Fatal("the action was told after its lease had ended on the store's clock")
	}
	if !errors.Is(err, idem.ErrOutcomeUnknown) {
		t.Fatalf("Do: %v", err)
	}
	if hanger.hanging() == 0 {
		t.Fatal("Do returned only once the hung heartbeat let go")
	}
	if rec, _ := mem.Load(context.Background(), req.Scope); rec.Record.Status != core.StatusUnknown {
		t.Fatalf("record %s", rec.Record.Describe())
	}
}

// TestLeaseEndCountsFromTheReserveSent: the reserve's answer is slow to come
// back (the store applied it at once, the answer took half the lease to
// arrive), and every heartbeat fails. The lease started when the store read
// its clock, so the attempt must be told by the lease's end on that clock,
// not a lease after the answer arrived.
func TestLeaseEndCountsFromTheReserveSent(t *testing.T) {
	const lease = 3 * time.Second
	slowAnswer := func(next store.ApplyFunc) store.ApplyFunc {
		return func(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
			switch ev.Kind {
			case core.EventReserve:
				err := next(ctx, scope, ev, p, out)
				time.Sleep(lease / 2) // the answer in transit
				return err
			case core.EventHeartbeat:
				return errBeatDown // no heartbeat extends the lease
			}
			return next(ctx, scope, ev, p, out)
		}
	}
	_, ex := leaseExecutor(t, lease, lease/10, slowAnswer)
	req := request(key1, payload)
	var toldBeforeEnd bool
	_, _ = ex.Do(context.Background(), req, func(ctx context.Context, at idem.Attempt) (idem.Response, error) {
		select {
		case <-ctx.Done():
		case <-time.After(10 * lease):
			t.Error("the action was never told")
			return created, nil
		}
		toldBeforeEnd = time.Now().Before(at.LockedUntil)
		return idem.Response{}, ctx.Err()
	})
	if !toldBeforeEnd {
		t.Fatal("the action was told after its lease had ended on the store's clock")
	}
}

// TestAHungBeatIsCutShortSoTheNextExtends: the first heartbeat hangs in a
// store that honours its context (a connection stuck on a dead peer); the
// heartbeats after it go through. Each beat is bounded by the interval, so
// the next beat extends the lease and an action that runs past its first
// lease is not cancelled; a beat left to hang would let the lease run out.
func TestAHungBeatIsCutShortSoTheNextExtends(t *testing.T) {
	const lease = 1500 * time.Millisecond
	var beats atomic.Int32
	firstHangs := func(next store.ApplyFunc) store.ApplyFunc {
		return func(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
			if ev.Kind == core.EventHeartbeat && beats.Add(1) == 1 {
				<-ctx.Done() // hangs until the caller gives up on it
				return ctx.Err()
			}
			return next(ctx, scope, ev, p, out)
		}
	}
	_, ex := leaseExecutor(t, lease, lease/6, firstHangs)
	var cause error
	res, err := ex.Do(context.Background(), request(key1, payload), func(ctx context.Context, at idem.Attempt) (idem.Response, error) {
		select {
		case <-time.After(lease + lease/2):
			return created, nil
		case <-ctx.Done():
			cause = context.Cause(ctx)
			return idem.Response{}, ctx.Err()
		}
	})
	if cause != nil || err != nil || !res.Recorded {
		t.Fatalf("the action was cancelled (%v) although the beats after the hung one could extend its lease: %+v %v (%d beats)", cause, res, err, beats.Load())
	}
	if beats.Load() < 2 {
		t.Fatalf("%d heartbeats: the schedule did not happen", beats.Load())
	}
}

// leaseExecutor is an executor with lease and heartbeat over a memory store
// on the real clock (Do's heartbeat runs on it), whose fast path goes
// through layer: the store's behaviour under test.
func leaseExecutor(t *testing.T, lease, heartbeat time.Duration, layer func(store.ApplyFunc) store.ApplyFunc) (*memstore.Store, *idem.Executor) {
	t.Helper()
	mem := memstore.New(memstore.Options{Clock: time.Now})
	p := idem.PolicyDefault()
	p.LeaseDuration = lease
	ex, err := idem.New(store.Wrap(store.Layer{Outer: mem, Inner: mem, Apply: layer}), idem.WithPolicy(p), idem.WithHeartbeatInterval(heartbeat))
	if err != nil {
		t.Fatal(err)
	}
	return mem, ex
}

// TestConflictOnABeatTellsAtOnce: a heartbeat that finds the record no
// longer in progress (here the action completed it in its own transaction,
// and works on) loses the lease for good: the action is told at once, not
// at the end of the lease its beats had extended (mutant
// exec-conflict-keeps-lease).
func TestConflictOnABeatTellsAtOnce(t *testing.T) {
	const lease = 3 * time.Second
	mem, ex := leaseExecutor(t, lease, lease/30, store.PassApply)
	req := request(key1, payload)
	var cause error
	var toldLeft time.Duration
	_, _ = ex.Do(context.Background(), req, func(ctx context.Context, at idem.Attempt) (idem.Response, error) {
		if err := at.CompleteIn(ctx, mem, created); err != nil {
			t.Errorf("CompleteIn: %v", err)
			return created, nil
		}
		select {
		case <-ctx.Done():
			cause, toldLeft = context.Cause(ctx), time.Until(at.LockedUntil)
		case <-time.After(10 * lease):
			t.Error("the action was never told")
		}
		return created, nil
	})
	if !errors.Is(cause, idem.ErrLeaseLost) {
		t.Fatalf("cause %v", cause)
	}
	if toldLeft < lease/2 {
		t.Fatalf("told with %v of its first lease left: the Conflict was not taken as the lease lost, the lease's end was waited for", toldLeft)
	}
}

// TestLeaseReckoning: the Lease, on times given by hand (it reads no
// clock). Its TellBy is the lease's end less the margin (a twentieth of
// the lease, at most a second), the end reckoned from when the call that
// granted or extended it was sent, however late its answer came; a store
// error leaves the end alone and brings the next beat forward; an answer
// other than Extended loses the lease at once; a beat's timeout never
// outlives TellBy or the interval.
func TestLeaseReckoning(t *testing.T) {
	const lease, beat = 2 * time.Second, 500 * time.Millisecond
	_, ex := leaseExecutor(t, lease, beat, store.PassApply)
	f, err := ex.Begin(request(key1, payload))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // the host's clock
	storeNow := t0.Add(time.Hour)                     // the store's, an hour ahead: only durations cross
	f.Applied(&store.Applied{Now: storeNow, Record: core.Record{Status: core.StatusInProgress, Token: 7, LockedUntil: storeNow.Add(lease)},
		Transition: core.Transition{Decision: core.Decision{Kind: core.DecisionExecute, Token: 7}}}, nil)
	if f.Next().Kind != idem.EffectRun {
		t.Fatalf("effect %v, want run", f.Next().Kind)
	}
	const margin = lease / 20
	l := f.Lease(t0)
	if got, want := l.TellBy(), t0.Add(lease-margin); !got.Equal(want) || l.Interval() != beat {
		t.Fatalf("TellBy %v, interval %v; want %v, %v", got, l.Interval(), want, beat)
	}
	if got := l.BeatTimeout(t0.Add(lease - margin - time.Millisecond)); got != time.Millisecond {
		t.Fatalf("a beat sent a millisecond before TellBy may take %v", got)
	}
	if got := l.BeatTimeout(t0); got != beat {
		t.Fatalf("a beat sent at the start may take %v, want the interval", got)
	}
	// An extension whose answer took 300 ms: reckoned from the send.
	sent, heard := t0.Add(time.Second), t0.Add(1300*time.Millisecond)
	ext := &store.Applied{Now: storeNow.Add(1100 * time.Millisecond), Record: core.Record{Status: core.StatusInProgress, Token: 7, LockedUntil: storeNow.Add(1100*time.Millisecond + lease)},
		Transition: core.Transition{Decision: core.Decision{Kind: core.DecisionExtended}}}
	if next := l.Beaten(sent, heard, ext, nil); next != beat {
		t.Fatalf("next beat in %v, want the interval", next)
	}
	if got, want := l.TellBy(), sent.Add(lease-margin); !got.Equal(want) {
		t.Fatalf("after a slow extension TellBy is %v, want %v (from the send)", got, want)
	}
	// A store error: the end stays, and the next beat comes within half
	// of what is left before TellBy (here 400 ms left: in 200 ms).
	before := l.TellBy()
	failed := before.Add(-400 * time.Millisecond)
	if next := l.Beaten(failed.Add(-time.Millisecond), failed, nil, errBeatDown); next != 200*time.Millisecond {
		t.Fatalf("after a store error 400 ms before TellBy the next beat is in %v, want 200ms", next)
	}
	if !l.TellBy().Equal(before) {
		t.Fatal("a store error moved TellBy")
	}
	if _, lost := l.Lost(before.Add(-time.Nanosecond)); lost {
		t.Fatal("lost a nanosecond before TellBy")
	}
	if cause, lost := l.Lost(before); !lost || !errors.Is(cause, idem.ErrLeaseLost) || !errors.Is(cause, errBeatDown) {
		t.Fatalf("at TellBy: lost %v, cause %v (want ErrLeaseLost with the last beat's error)", lost, cause)
	}
	// A Conflict: lost at once, whatever the time.
	conflict := &store.Applied{Transition: core.Transition{Decision: core.Decision{Kind: core.DecisionConflict}}}
	l.Beaten(heard, heard, conflict, nil)
	if cause, lost := l.Lost(t0); !lost || !errors.Is(cause, idem.ErrLeaseLost) {
		t.Fatalf("after a Conflict: lost %v, cause %v", lost, cause)
	}
}
