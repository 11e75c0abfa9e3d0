package sim

import (
	"context"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// operatorSession is a person with idemctl (FaultOperatorEvict): they look
// at the record of a recent request (idemctl show) and, a while later,
// evict it by the token they read (idemctl evict). The core must refuse an
// evict of a record in progress or unknown (its outcome is not known:
// freeing its key could execute it twice) and one whose token is no longer
// the record's (the key moved on while they thought); it removes a
// settled record or a tombstone, and the key's next request executes in a
// new incarnation. Half the sessions pick a record in progress, unknown or
// failed_retryable if a recent request has one, where the two refusals are
// reached.
type operatorSession struct {
	w     *world
	meta  opMeta
	key   core.Scope
	token core.Token // the record's token when they looked
}

// operatorRecent is how many of the latest requests an operator picks from.
const operatorRecent = 64

// Kinds of operator events.
const (
	evShow  uint8 = iota // look at the record
	evEvict              // evict it by the token read
)

// operatorChance gives an operator, at a new request, the chance to start
// a session, on virtual time.
func (w *world) operatorChance() {
	if w.liveClock != nil || !w.fault(FaultOperatorEvict, w.rng.operator) {
		// A live run has no operator: its sessions are on virtual time.
		return
	}
	r := w.rng.operator
	recent := w.requests[max(0, len(w.requests)-operatorRecent):]
	req := recent[r.IntN(len(recent))]
	if r.IntN(2) == 0 {
		var open []*request
		for _, q := range recent {
			switch w.shadow[q.scope].Status {
			case core.StatusInProgress, core.StatusUnknown, core.StatusFailedRetryable:
				open = append(open, q)
			}
		}
		if len(open) > 0 {
			req = open[r.IntN(len(open))]
		}
	}
	s := &operatorSession{w: w, key: req.key, meta: opMeta{actor: ActorOperator, scope: req.scope}}
	w.afterH(0, s, evShow)
}

func (s *operatorSession) handle(kind uint8) {
	w := s.w
	s.meta.returnAt = w.now // a person's call: its answer is not what is timed
	switch kind {
	case evShow:
		snap, err := w.store.view(&s.meta).Load(context.Background(), s.key)
		if err != nil || !snap.Record.Exists() {
			return
		}
		s.token = snap.Record.Token
		w.log(TraceEvent{Scope: s.meta.scope, Actor: ActorOperator, What: WhatShow, Token: s.token})
		w.afterH(between(w.rng.operator, 0, 2*w.policy.LeaseDuration), s, evEvict)
	case evEvict:
		s.meta.event, s.meta.attempt = core.EventEvict, s.token
		var out store.Applied
		err := store.Apply(context.Background(), w.store.view(&s.meta), s.key, core.Event{Kind: core.EventEvict, Token: s.token}, &w.policy, &out)
		decision := int64(out.Transition.Decision.Kind)
		if err != nil && !core.Refused(err) {
			decision = -1
		}
		w.log(TraceEvent{Scope: s.meta.scope, Actor: ActorOperator, What: WhatEvict, Token: s.token, Arg: decision})
	}
}
