package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// ledger is the fake downstream: it charges once per call, keyed by scope
// and attempt token, and is what the reconciler's check reads.
type ledger struct {
	mu      sync.Mutex
	charges map[core.Scope][]charge
}

type charge struct {
	token core.Token
	body  string
}

func (l *ledger) action(sc core.Scope, sleep time.Duration) idem.Action {
	return func(ctx context.Context, at idem.Attempt) (idem.Response, error) {
		body := fmt.Sprintf(`{"charge":"%s","token":%d}`, sc.Key, at.Token)
		l.mu.Lock()
		if !time.Now().Before(at.LockedUntil) {
			// The downstream enforces the attempt's lease as a deadline
			// (see idem.Check): what lets the check answer not executed.
			l.mu.Unlock()
			return idem.Response{}, &idem.NotExecutedError{Code: "deadline_passed"}
		}
		l.charges[sc] = append(l.charges[sc], charge{at.Token, body})
		l.mu.Unlock()
		if sleep > 0 {
			time.Sleep(sleep)
		}
		return idem.Response{StatusCode: 201, Body: []byte(body)}, nil
	}
}

// check tells the reconciler the truth: the action charges before anything
// else, so an attempt without a charge never executed.
func (l *ledger) check(_ context.Context, rec idem.Record) (idem.Finding, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.charges[rec.Scope] {
		if c.token == rec.Token {
			return idem.Finding{Verdict: core.VerdictExecuted, Response: idem.Response{StatusCode: 201, Body: []byte(c.body)}}, nil
		}
	}
	if time.Now().Before(rec.LockedUntil) {
		return idem.Finding{Verdict: core.VerdictStillUnknown}, nil // the attempt may still charge
	}
	return idem.Finding{Verdict: core.VerdictNotExecuted}, nil
}
