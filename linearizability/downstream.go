package linearizability

import (
	"fmt"
	"sync"

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
