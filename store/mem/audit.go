package memstore

import (
	"context"
	"sync"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

var _ store.Auditor = (*Store)(nil)

// auditTrail is the store's audit trail (store.Auditor): rare writes, by
// hand, so one lock for all of it.
type auditTrail struct {
	mu     sync.Mutex
	trails map[core.Scope][]store.Audit
}

// ApplyAudited applies ev to a.Scope and keeps a when the event wrote
// (store.Auditor). The trail has it once Apply returned: a reader between
// the two sees the record settled and its audit not yet, never the other
// way round.
func (s *Store) ApplyAudited(ctx context.Context, ev core.Event, p *core.Policy, a *store.Audit, out *store.Applied) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if err := s.Apply(ctx, a.Scope, ev, p, out); err != nil {
		return err
	}
	if store.Audited(a, out) {
		s.audits.mu.Lock()
		if s.audits.trails == nil {
			s.audits.trails = make(map[core.Scope][]store.Audit)
		}
		s.audits.trails[a.Scope] = append(s.audits.trails[a.Scope], *a)
		s.audits.mu.Unlock()
	}
	return nil
}

// Audits returns scope's audit trail, oldest first (store.Auditor).
func (s *Store) Audits(ctx context.Context, scope core.Scope) ([]store.Audit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.audits.mu.Lock()
	defer s.audits.mu.Unlock()
	return append([]store.Audit(nil), s.audits.trails[scope]...), nil
}
