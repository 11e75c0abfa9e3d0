package pgxstore

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/store/pgx/internal/chaos"
)

func chaosConfig(t *testing.T, o Options, faults time.Duration) chaos.Config {
	newTestDB(t) // skips or fails (CI=true) without a server
	return chaos.Config{DSN: dsn(), Clients: 16, Keys: 400, Faults: faults, Seed: uint64(time.Now().UnixNano()), Out: os.Stdout,
		NewStore: func(ctx context.Context, pool *pgxpool.Pool, schema string) (store.Store, func(), error) {
			o.Schema = schema
			if err := Migrate(ctx, pool, o); err != nil {
				return nil, nil, err
			}
			s, err := New(ctx, pool, o)
			if err != nil {
				return nil, nil, err
			}
			return s, s.Close, nil
		}}
}

// TestChaosShort is make test's short chaos run (make chaos-pg is the long
// one, with a server restart): every invariant must hold.
func TestChaosShort(t *testing.T) {
	cfg := chaosConfig(t, Options{DueClaim: time.Second}, 4*time.Second)
	// Bystanders: a connection named as every run's used to be, and one
	// named as another run's would be. The fault loop must leave both alone.
	var bystanders []*pgx.Conn
	for _, name := range []string{"idem-chaos", chaos.AppNamePrefix + "0-bystander"} {
		bystanders = append(bystanders, bystander(t, name))
	}
	rep, err := chaos.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep.Print(os.Stdout, cfg)
	if len(rep.Violations) > 0 {
		t.Fatalf("%d violations (seed %d)", len(rep.Violations), cfg.Seed)
	}
	if rep.Kills == 0 {
		t.Fatal("the fault loop terminated no backend of its own: the run tested nothing")
	}
	for _, c := range bystanders {
		if err := c.Ping(context.Background()); err != nil {
			t.Errorf("bystander %q: %v: the run terminated a backend it did not open", c.Config().RuntimeParams["application_name"], err)
		}
	}
}

// bystander is a connection to the test server named name, closed at the end.
func bystander(t *testing.T, name string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn())
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = name
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// TestChaosCatchesUnfencedCompletion proves the harness can fail: a driver
// whose held path (the executor's completion of its attempt, through
// ApplyHeld, which the Recorder passes through) ignores its precondition
// must be reported. Completions after a heartbeat moved the record on are
// then written over it from the stale held record, which the lifecycle
// history check refuses; and a stale owner's write over a newer attempt
// loses that attempt's completion.
func TestChaosCatchesUnfencedCompletion(t *testing.T) {
	cfg := chaosConfig(t, Options{DueClaim: time.Second, unfencedCompletion: true}, 2*time.Second)
	cfg.Out = io.Discard
	rep, err := chaos.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Print(&b, cfg)
	t.Log(b.String())
	if len(rep.Violations) == 0 {
		t.Fatalf("the planted unfenced completion was not caught (seed %d)", cfg.Seed)
	}
}
