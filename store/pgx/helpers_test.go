package pgxstore

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	"github.com/jackc/pgx/v5"
)

func itoa(n int) string { return strconv.Itoa(n) }

// historiesForTest keeps make test's share of the suite to about a minute
// on two cores; IDEM_LIN_HISTORIES runs it longer.
func historiesForTest() int {
	if testing.Short() {
		return 3
	}
	return 10
}

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }

// applyOver is store.Apply with an Applied of its own.
func applyOver(ctx context.Context, s store.Store, p *core.Policy, sc core.Scope, ev core.Event) (store.Applied, error) {
	var a store.Applied
	err := store.Apply(ctx, s, sc, ev, p, &a)
	return a, err
}

// scopeNamed are a test's ad hoc statement's arguments for scopeMatch.
func scopeNamed(sc core.Scope) pgx.NamedArgs {
	return pgx.NamedArgs{"tenant": sc.Tenant, "principal": sc.Principal, "use_case": sc.UseCase, "idem_key": sc.Key}
}
