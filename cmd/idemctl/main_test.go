package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem"
	pgxstore "github.com/idemkit/idem/store/pgx"
)

func dsn() string {
	if d := os.Getenv("IDEM_PG_DSN"); d != "" {
		return d
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// fixture is a migrated schema of its own with an executor over it.
type fixture struct {
	schema string
	ex     *idem.Executor
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn())
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", dsn(), err)
	}
	schema := fmt.Sprintf("idemctl_%d", time.Now().UnixNano())
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	o := pgxstore.Options{Schema: schema}
	if err := pgxstore.Migrate(ctx, pool, o); err != nil {
		t.Fatal(err)
	}
	s, err := pgxstore.New(ctx, pool, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		pool.Close()
	})
	p := idem.PolicyDefault()
	p.InFlightWait, p.ReconcileAttemptsMax = 0, 1
	ex, err := idem.New(s, idem.WithPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{schema: schema, ex: ex}
}

func req(key string) idem.Request {
	return idem.Request{Scope: idem.Scope{Principal: "alice", UseCase: "payments.create", Key: key}, Fingerprint: sha256.Sum256([]byte(key))}
}

// records makes three completed payments and one the reconciler gave up on.
func (f *fixture) records(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for i := range 3 {
		_, err := f.ex.Do(ctx, req(fmt.Sprintf("paid-key-%016d", i)), func(context.Context, idem.Attempt) (idem.Response, error) {
			return idem.Response{StatusCode: 201, Body: []byte(`{"secret":"card-4242"}`)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.ex.Do(ctx, req("lost-key-00000000001"), func(context.Context, idem.Attempt) (idem.Response, error) {
		return idem.Response{}, errors.New("gateway timeout")
	}); !errors.Is(err, idem.ErrOutcomeUnknown) {
		t.Fatal(err)
	}
}

// ctl runs idemctl on the fixture's schema: its exit code and output.
func (f *fixture) ctl(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"-dsn", dsn(), "-pg-schema", f.schema}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestListPagesOldestFirst: list prints a page and the cursor of the
// next; following it covers every record once, oldest first.
func TestListPagesOldestFirst(t *testing.T) {
	f := newFixture(t)
	f.records(t)
	var keys []string
	after := ""
	for page := 0; page < 5; page++ {
		args := []string{"-json", "list", "-limit", "2"}
		if after != "" {
			args = append(args, "-after", after)
		}
		code, out, errOut := f.ctl(args...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var got struct {
			Records []recordView `json:"records"`
			Next    string       `json:"next"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, r := range got.Records {
			keys = append(keys, r.Key)
			if r.Body != nil || r.Headers != nil {
				t.Errorf("list printed a response body: %+v", r)
			}
		}
		if after = got.Next; after == "" {
			break
		}
	}
	want := []string{"paid-key-0000000000000000", "paid-key-0000000000000001", "paid-key-0000000000000002", "lost-key-00000000001"}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("pages listed %v, want %v", keys, want)
	}
}

// TestListTheAbandoned: the table of unknown records the reconciler gave
// up on, once it has.
func TestListTheAbandoned(t *testing.T) {
	f := newFixture(t)
	f.records(t)
	if code, out, _ := f.ctl("list", "-abandoned"); code != exitOK || strings.Contains(out, "lost-key") {
		t.Fatalf("before the reconciler: exit %d\n%s", code, out)
	}
	rc, err := f.ex.Reconciler(func(context.Context, idem.Record) (idem.Finding, error) {
		return idem.Finding{Verdict: idem.VerdictStillUnknown}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out, errOut := f.ctl("list", "-abandoned")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if strings.Contains(out, "lost-key-00000000001") && strings.Contains(out, "unknown") && !strings.Contains(out, "paid-key") {
			if !strings.HasPrefix(out, "CREATED") {
				t.Errorf("no table header:\n%s", out)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned record is not listed:\n%s", out)
		}
		_, _ = rc.RunOnce(context.Background()) // due once the lease and backoff pass
		time.Sleep(50 * time.Millisecond)
	}
}

// TestShowAndStats: show prints one record, its body only with -body;
// stats counts per status.
func TestShowAndStats(t *testing.T) {
	f := newFixture(t)
	f.records(t)
	scope := []string{"-principal", "alice", "-use-case", "payments.create", "-key", "paid-key-0000000000000001"}
	code, out, errOut := f.ctl(append([]string{"show"}, scope...)...)
	if code != exitOK || !strings.Contains(out, "completed") || strings.Contains(out, "card-4242") {
		t.Fatalf("show: exit %d %s\n%s", code, errOut, out)
	}
	code, out, _ = f.ctl(append([]string{"-json", "show", "-body"}, scope...)...)
	var v recordView
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || string(v.Body) != `{"secret":"card-4242"}` || v.ResponseStatus != 201 {
		t.Fatalf("show -body: exit %d\n%s", code, out)
	}
	if code, _, errOut := f.ctl("show", "-principal", "alice", "-use-case", "payments.create", "-key", "no-such-key-0000000"); code != exitFailed || !strings.Contains(errOut, "no record") {
		t.Fatalf("a scope with no record: exit %d %s", code, errOut)
	}
	code, out, _ = f.ctl("-json", "stats")
	var st struct {
		ByStatus map[string]int64 `json:"by_status"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || st.ByStatus["completed"] != 3 || st.ByStatus["unknown"] != 1 {
		t.Fatalf("stats: exit %d\n%s", code, out)
	}
	if code, out, _ := f.ctl("stats"); code != exitOK || !strings.Contains(out, "completed") || !strings.Contains(out, "reconcile queue: due now") {
		t.Fatalf("stats table: exit %d\n%s", code, out)
	}
}

// TestBadCommandLines: a mistake is exit 2 with a reason, never a panic.
func TestBadCommandLines(t *testing.T) {
	f := newFixture(t)
	for _, args := range [][]string{
		{},
		{"evict-all"},
		{"list", "-status", "done"},
		{"list", "-limit", "0"},
		{"list", "-after", "not-a-cursor"},
		{"list", "-status", "completed", "-abandoned"},
		{"show", "-key", "short"},
	} {
		if code, _, errOut := f.ctl(args...); code != exitUsage || errOut == "" {
			t.Errorf("%q: exit %d, %q", args, code, errOut)
		}
	}
	var errOut bytes.Buffer
	if code := run(context.Background(), []string{"stats"}, &bytes.Buffer{}, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "-dsn") {
		t.Errorf("no store: exit %d %q", code, errOut.String())
	}
}
