package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// evict removes a settled record (completed, failed_retryable) or a
// tombstone by hand, through the core's Evict event: fenced by the token
// the operator read (show), refused by the core for a record in progress
// or unknown (its outcome is not known: freeing its key could execute it
// twice), and audited in the store's trail, which outlives the record.
// The key is then free: the next request with it executes.
func evict(fs *flag.FlagSet) func(context.Context, operatorStore, *printer) error {
	var a store.Audit
	var token uint64
	scopeFlags(fs, &a.Scope)
	fs.Uint64Var(&token, "token", 0, "the record's token, as show prints it: the record is removed only if it still holds that token")
	fs.StringVar(&a.Who, "who", "", "who evicts it (kept in the audit trail)")
	fs.StringVar(&a.Why, "why", "", "why: a ticket, a data removal request (kept in the audit trail)")
	return func(ctx context.Context, s operatorStore, p *printer) error {
		au, ok := s.(store.Auditor)
		if !ok {
			return fmt.Errorf("%T keeps no audit trail: evict would remove a record nobody could account for", s)
		}
		if err := a.Scope.Validate(core.KeyBytesMax); err != nil {
			return usageError(err.Error())
		}
		if token == 0 {
			return usageError("-token: give the token of the record you examined (show prints it)")
		}
		a.Event, a.Token = core.EventEvict, core.Token(token)
		if err := a.Validate(); err != nil {
			return usageError(err.Error())
		}
		before, err := s.Load(ctx, a.Scope)
		if err != nil {
			return err
		}
		var out store.Applied
		policy := core.PolicyDefault() // Evict reads none of it
		if err := au.ApplyAudited(ctx, core.Event{Kind: core.EventEvict, Token: a.Token}, &policy, &a, &out); err != nil {
			return err
		}
		if out.Transition.Write.Kind == core.WriteNone {
			return fmt.Errorf("nothing evicted: the core decided %v for a record %v with token %d (evict removes only a completed, failed_retryable or expired record, by its token)",
				out.Transition.Decision.Kind, out.Before, before.Record.Token)
		}
		return p.byHand("evicted", &before.Record, &a)
	}
}
