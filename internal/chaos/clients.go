package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// startClients starts cfg.Clients clients, each with its own executor and
// its own random source, and returns what stops them and waits for them.
func (r *run) startClients(ctx context.Context) (stop func(), err error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	stop = func() {
		close(done)
		wg.Wait()
	}
	for c := range r.cfg.Clients {
		ex, err := idem.New(r.rec.Client(c), idem.WithPolicy(r.p), idem.WithHeartbeatInterval(r.p.LeaseDuration/4), idem.WithOutcomeTimeout(time.Second))
		if err != nil {
			stop()
			return nil, err
		}
		rng := rand.New(rand.NewPCG(r.cfg.Seed+uint64(c), 1))
		wg.Go(func() { r.client(ctx, ex, rng, done) })
	}
	return stop, nil
}

// client picks keys at random and sends them through ex until done is
// closed, counting how each request ended.
func (r *run) client(ctx context.Context, ex *idem.Executor, rng *rand.Rand, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		default:
		}
		sc := r.pick(rng)
		sleep := time.Duration(rng.IntN(int(r.p.LeaseDuration / 2))) // some outlive a heartbeat
		if rng.IntN(10) == 0 {
			sleep = r.p.LeaseDuration * 3 / 2 // outlives its lease if a heartbeat fails
		}
		res, err := ex.Do(ctx, idem.Request{Scope: sc, Fingerprint: fingerprint}, r.led.action(sc, sleep))
		r.reqs.Add(1)
		switch {
		case err != nil:
			r.errs.Add(1)
			time.Sleep(r.cfg.Backoff)
		case res.Kind == idem.ResultExecuted:
			r.executed.Add(1)
			if res.Recorded {
				r.seen.add(sc, res.Response)
			}
		default:
			r.replayed.Add(1)
			r.seen.add(sc, res.Response)
		}
	}
}

// startBackground runs a sweeper and a reconciler beside the clients, as in
// a service, and returns what stops them and waits for them.
func (r *run) startBackground(ctx context.Context) (stop func()) {
	bg, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	ex, _ := idem.New(r.rec.Client(r.cfg.Clients+1), idem.WithPolicy(r.p))
	quiet := idem.WithErrorHandler(func(error) {}) // faults make them fail; they try again
	sweeper, _ := ex.Sweeper(quiet)
	reconciler, _ := ex.Reconciler(r.led.check, quiet)
	wg.Go(func() { _ = sweeper.Run(bg, 50*time.Millisecond) })
	wg.Go(func() { _ = reconciler.Run(bg, 50*time.Millisecond) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// answers are the responses the clients got, key by key: each must be what
// the key replays once the run is over.
type answers struct {
	mu sync.Mutex
	by map[core.Scope][]idem.Response
}

func (a *answers) add(sc core.Scope, r idem.Response) {
	a.mu.Lock()
	a.by[sc] = append(a.by[sc], r.Clone())
	a.mu.Unlock()
}
