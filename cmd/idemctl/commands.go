package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// command registers its flags on fs and returns what it does.
type command func(fs *flag.FlagSet) func(ctx context.Context, s operatorStore, p *printer) error

var commands = map[string]command{"list": list, "show": show, "stats": stats, "resolve": resolve, "evict": evict}

// list prints a page of records, oldest first, and the cursor of the next.
func list(fs *flag.FlagSet) func(context.Context, operatorStore, *printer) error {
	status := fs.String("status", "", "list only this status: in_progress, completed, failed_retryable, unknown or expired")
	abandoned := fs.Bool("abandoned", false, "list only unknown records the reconciler gave up on (for an operator)")
	limit := fs.Int("limit", 50, fmt.Sprintf("records in the page (1 to %d)", store.ListLimitMax))
	after := fs.String("after", "", "the cursor a previous page printed: list the page after it")
	return func(ctx context.Context, s operatorStore, p *printer) error {
		q := store.ListQuery{Abandoned: *abandoned, Limit: *limit}
		if *status != "" {
			st, ok := statusNamed(*status)
			if !ok {
				return usageError(fmt.Sprintf("-status %q: not a record's status", *status))
			}
			q.Status = st
		}
		if *after != "" {
			c, err := decodeCursor(*after)
			if err != nil {
				return usageError("-after: " + err.Error())
			}
			q.After = c
		}
		if err := q.Validate(); err != nil {
			return usageError(err.Error())
		}
		recs, err := s.List(ctx, q)
		if err != nil {
			return err
		}
		next := ""
		if len(recs) == q.Limit {
			next = encodeCursor(store.CursorOf(&recs[len(recs)-1]))
		}
		return p.list(recs, next)
	}
}

// show prints one scope's record; its response body and headers only with
// -body.
func show(fs *flag.FlagSet) func(context.Context, operatorStore, *printer) error {
	var sc core.Scope
	scopeFlags(fs, &sc)
	body := fs.Bool("body", false, "show the stored response's headers and body (they may hold personal data)")
	return func(ctx context.Context, s operatorStore, p *printer) error {
		if err := sc.Validate(core.KeyBytesMax); err != nil {
			return usageError(err.Error())
		}
		snap, err := s.Load(ctx, sc)
		if err != nil {
			return err
		}
		var trail []store.Audit
		if au, ok := s.(store.Auditor); ok {
			if trail, err = au.Audits(ctx, sc); err != nil {
				return err
			}
		}
		if !snap.Record.Exists() && len(trail) == 0 {
			return fmt.Errorf("no record for %s", sc)
		}
		return p.show(&snap.Record, *body, trail)
	}
}

// scopeFlags registers the flags that name one scope.
func scopeFlags(fs *flag.FlagSet, sc *core.Scope) {
	fs.StringVar(&sc.Tenant, "tenant", "", "the scope's tenant (may be empty)")
	fs.StringVar(&sc.Principal, "principal", "", "the scope's principal")
	fs.StringVar(&sc.UseCase, "use-case", "", "the scope's use case")
	fs.StringVar(&sc.Key, "key", "", "the idempotency key")
}

// stats prints the counts per status and each worker queue's backlog.
func stats(*flag.FlagSet) func(context.Context, operatorStore, *printer) error {
	return func(ctx context.Context, s operatorStore, p *printer) error {
		st, err := s.Stats(ctx)
		if err != nil {
			return err
		}
		return p.stats(&st)
	}
}

// statusNamed is the status of that name.
func statusNamed(name string) (core.Status, bool) {
	for st := core.StatusInProgress; st.Valid(); st++ {
		if st.String() == name {
			return st, true
		}
	}
	return 0, false
}
