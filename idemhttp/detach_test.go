package idemhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/idemhttp"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// Issue 20 §5: a client that gives up does not decide the outcome. The
// handler runs on a context its client's disconnect does not cancel, bound
// by the route's ExecutionTimeout and still cancelled when the attempt
// loses its lease.

// clientContexts is a route option that hands over the context of each
// request as the middleware got it (the client's), so that a test can
// wait until the server has seen its client go.
func clientContexts(rt *idemhttp.Route) chan context.Context {
	ctxs := make(chan context.Context, 4)
	rt.Tenant = func(r *http.Request) (string, error) {
		ctxs <- r.Context()
		return "", nil
	}
	return ctxs
}

// e2eClientTimeoutDoesNotDecideTheOutcome: a client times out while its
// charge runs. The handler, which stops the charge as a gateway would if
// its context ended, is not cancelled: the charge finishes and is
// recorded, a retry gets it replayed byte for byte, and nothing ran twice.
func e2eClientTimeoutDoesNotDecideTheOutcome(t *testing.T, b backend) {
	var ctxs chan context.Context
	w := newWorld(t, b, worldOptions{route: func(rt *idemhttp.Route) { ctxs = clientContexts(rt) }})
	started, release := make(chan struct{}), make(chan struct{})
	charged := make(chan string, 1)
	w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
		close(started)
		select {
		case <-release:
		case <-r.Context().Done(): // a gateway call would end here: the outcome unknown
			idemhttp.OutcomeUnknown(r, context.Cause(r.Context()))
			rw.WriteHeader(http.StatusGatewayTimeout)
			charged <- ""
			return
		}
		body := fmt.Sprintf(`{"id":"pay_%d","status":"succeeded"}`, n)
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Location", fmt.Sprintf("/payments/pay_%d", n))
		rw.WriteHeader(http.StatusCreated)
		io.WriteString(rw, body)
		charged <- body
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond) // the client gives up
	defer cancel()
	gaveUp := make(chan answer, 1)
	go func() {
		gaveUp <- w.send(call{method: http.MethodPost, path: "/payments", key: key1, principal: "alice", contentType: "application/json", body: payment, ctx: ctx})
	}()
	clientCtx := <-ctxs
	<-started
	if a := <-gaveUp; !errors.Is(a.err, context.DeadlineExceeded) {
		t.Fatalf("the client that timed out got %d %v", a.status, a.err)
	}
	<-clientCtx.Done() // the server saw the client go
	close(release)
	body := <-charged
	if body == "" {
		t.Fatal("the handler's context was cancelled when its client went away: the charge stopped, its outcome unknown")
	}
	w.waitFinished(1)
	retry := w.pay(key1)
	<-ctxs
	if retry.status != http.StatusCreated || retry.header.Get(idemhttp.ReplayedHeader) != "true" || string(retry.body) != body ||
		retry.header.Get("Location") != "/payments/pay_1" {
		t.Fatalf("the retry: %d %v %s, want the charge's 201 replayed byte for byte (%s)", retry.status, retry.header, retry.body, body)
	}
	if n := w.executions.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
}

// e2eLeaseLostAfterTheClientLeft: once the client has gone, the handler
// still learns that its attempt lost the lease (the store is down until
// the lease ends): its context is cancelled with idem.ErrLeaseLost.
func e2eLeaseLostAfterTheClientLeft(t *testing.T, b backend) {
	var ctxs chan context.Context
	w := newWorld(t, b, worldOptions{
		policy: func(p *idem.Policy) { p.LeaseDuration = time.Second },
		route:  func(rt *idemhttp.Route) { ctxs = clientContexts(rt) },
	})
	started, causes := make(chan struct{}), make(chan error, 1)
	w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
		close(started)
		select {
		case <-r.Context().Done():
			causes <- context.Cause(r.Context())
		case <-time.After(10 * time.Second):
			causes <- errors.New("the handler's context was never cancelled")
		}
		idemhttp.OutcomeUnknown(r, context.Cause(r.Context()))
		rw.WriteHeader(http.StatusGatewayTimeout)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan answer, 1)
	go func() {
		gone <- w.send(call{method: http.MethodPost, path: "/payments", key: key1, principal: "alice", contentType: "application/json", body: payment, ctx: ctx})
	}()
	clientCtx := <-ctxs
	<-started
	cancel()
	<-gone
	<-clientCtx.Done()
	w.setDown(true) // the heartbeats fail until the lease ends
	cause := <-causes
	w.setDown(false)
	if !errors.Is(cause, idem.ErrLeaseLost) {
		t.Fatalf("the handler's context ended with %v, want idem.ErrLeaseLost", cause)
	}
}

// TestExecutionTimeoutBoundsTheHandler: the handler's context ends at the
// route's ExecutionTimeout (ExecutionTimeoutDefault if unset), with
// idemhttp.ErrExecutionTimeout as its cause.
func TestExecutionTimeoutBoundsTheHandler(t *testing.T) {
	for _, c := range []struct {
		timeout, want time.Duration
	}{{50 * time.Millisecond, 50 * time.Millisecond}, {0, idemhttp.ExecutionTimeoutDefault}} {
		ex, err := idem.New(memstore.New(memstore.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		protect, err := idemhttp.New(ex, idemhttp.Route{UseCase: "test", Anonymous: true, ExecutionTimeout: c.timeout})
		if err != nil {
			t.Fatal(err)
		}
		var deadline time.Time
		var cause error
		h := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var ok bool
			if deadline, ok = r.Context().Deadline(); !ok {
				t.Error("the handler's context has no deadline")
			}
			if c.timeout != 0 {
				select {
				case <-r.Context().Done():
					cause = context.Cause(r.Context())
				case <-time.After(10 * time.Second): // a bound for the test, far past the timeout
				}
			}
			idemhttp.NotExecuted(r, cause)
		}))
		sent := time.Now()
		postTo(h, context.Background())
		// The handler started between sent and now: so did its timeout.
		if earliest, latest := sent.Add(c.want), time.Now().Add(c.want); deadline.Before(earliest) || deadline.After(latest) {
			t.Errorf("timeout %v: the deadline was %v after the request was sent, want %v", c.timeout, deadline.Sub(sent), c.want)
		}
		if c.timeout != 0 && !errors.Is(cause, idemhttp.ErrExecutionTimeout) {
			t.Errorf("timeout %v: the context ended with %v, want ErrExecutionTimeout", c.timeout, cause)
		}
	}
}

// TestClientGoneBeforeTheHandlerStarted: the client goes away once its key
// is reserved, before the handler starts. The handler does not run, and
// the key is free at once: the retry executes (not 409 outcome_unknown).
func TestClientGoneBeforeTheHandlerStarted(t *testing.T) {
	mem := memstore.New(memstore.Options{})
	var cancelClient context.CancelFunc
	st := store.Wrap(store.Layer{Outer: mem, Inner: mem, Apply: func(next store.ApplyFunc) store.ApplyFunc {
		return func(ctx context.Context, sc core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
			err := next(ctx, sc, ev, p, out)
			if ev.Kind == core.EventReserve && cancelClient != nil {
				cancelClient() // the reserve applied; the client hangs up now
				cancelClient = nil
			}
			return err
		}
	}})
	ex, err := idem.New(st)
	if err != nil {
		t.Fatal(err)
	}
	protect, err := idemhttp.New(ex, idemhttp.Route{UseCase: "test", Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		if err := r.Context().Err(); err != nil { // a gateway call would fail here: the outcome unknown
			idemhttp.OutcomeUnknown(r, err)
			w.WriteHeader(http.StatusGatewayTimeout)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	cancelClient = cancel
	if rec := postTo(h, ctx); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), string(idemhttp.CodeRequestCancelled)) || runs != 0 {
		t.Fatalf("the client gone before the handler started: %d %s, %d runs; want 503 request_cancelled and no run", rec.Code, rec.Body, runs)
	}
	if rec := postTo(h, context.Background()); rec.Code != http.StatusCreated || rec.Header().Get(idemhttp.ReplayedHeader) != "" || runs != 1 {
		t.Fatalf("the retry: %d %s, %d runs; want a first execution", rec.Code, rec.Body, runs)
	}
}
