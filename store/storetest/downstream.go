package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// downstream is the system the actions charge: it fences by token, as a
// payment gateway keyed by the attempt's token would, and it remembers every
// side effect, so that at-most-once can be checked.
type downstream struct {
	mu       sync.Mutex
	executed map[core.Scope]execution
	fenced   map[core.Scope]core.Token // attempts up to this token were found not executed
	twice    []string
}

func newDownstream() *downstream {
	return &downstream{executed: map[core.Scope]execution{}, fenced: map[core.Scope]core.Token{}}
}

// execution is the one side effect of a scope: by which attempt, with what
// response.
type execution struct {
	token core.Token
	resp  core.Response
}

// perform is the side effect of attempt token; false if it is fenced off.
func (d *downstream) perform(sc core.Scope, token core.Token, resp core.Response) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if token <= d.fenced[sc] {
		return false
	}
	if e, ok := d.executed[sc]; ok {
		d.twice = append(d.twice, fmt.Sprintf("%s: attempt t%d executed after attempt t%d had", sc, token, e.token))
		return true
	}
	d.executed[sc] = execution{token, resp}
	return true
}

// find tells the reconciler the truth about attempt token, fencing it off if
// it did not execute.
func (d *downstream) find(sc core.Scope, token core.Token) idem.Finding {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.executed[sc]; ok && e.token == token {
		return idem.Finding{Verdict: core.VerdictExecuted, Response: e.resp}
	}
	d.fenced[sc] = max(d.fenced[sc], token)
	return idem.Finding{Verdict: core.VerdictNotExecuted}
}

// randomAction is an action that may sleep (past its lease, sometimes),
// refuse before sending, time out before or after charging the downstream,
// or panic after charging it.
func randomAction(rng *rand.Rand, lease time.Duration, down *downstream) idem.Action {
	return func(ctx context.Context, a idem.Attempt) (idem.Response, error) {
		switch r := rng.IntN(100); {
		case r < 15:
			time.Sleep(time.Duration(rng.IntN(int(lease / 2))))
		case r < 22:
			time.Sleep(lease + time.Duration(rng.IntN(int(lease))))
		}
		r := rng.IntN(100)
		if r < 8 {
			return idem.Response{}, idem.NotExecuted(errors.New("refused before sending"))
		}
		if r < 13 {
			return idem.Response{}, errors.New("timed out before sending") // unknown; did not execute
		}
		resp := responses[rng.IntN(len(responses))].Clone()
		resp.Body = fmt.Appendf(resp.Body, " t%d", a.Token)
		if !down.perform(a.Scope, a.Token, resp) {
			return idem.Response{}, idem.NotExecuted(errors.New("fenced off by the downstream"))
		}
		switch {
		case r < 85:
			return resp, nil
		case r < 96:
			return idem.Response{}, errors.New("timed out after executing")
		}
		panic("the action panicked after executing")
	}
}
